//! `/merge`: the files sent between `/merge` and `/done` (or the Done button) are one ticket and
//! one PDF, in the order they came; each is counted as it comes, within the merge's limits;
//! `/cancel` alone drops the open merge; one file captioned `merge` is told how.

use std::path::Path;

use docket::domain::{JobState, Operation, Ticket};
use docket::store::JobFilter;

use crate::albums::{jpeg, pages_of};
use crate::per_backend;
use crate::support::calls::{says, text_of, to_chat};
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp};

per_backend!(
    files_sent_between_merge_and_done_are_one_pdf_in_the_order_they_came,
    the_done_button_under_a_count_finishes_the_merge,
    cancel_alone_drops_the_open_merge_and_done_without_one_says_so,
    a_merge_takes_no_more_files_than_its_limit,
    one_file_captioned_merge_is_told_how_and_makes_no_ticket,
);

async fn files_sent_between_merge_and_done_are_one_pdf_in_the_order_they_came(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 950;
    app.send_text(chat, "/merge");
    app.fake.wait_for_call("sendMessage", says(chat, "send the files to merge"), DEADLINE).await;
    app.send(chat, upload::pdf("pdf/text-1page.pdf", "cover.pdf").caption("shrink"));
    app.send(chat, upload::photo(jpeg(160, 90), 160, 90));
    app.send(chat, upload::pdf("pdf/text-20pages.pdf", "body.pdf"));
    let counted = app.fake.wait_for_call("sendMessage", says(chat, "3 files so far"), DEADLINE).await;
    assert!(text_of(&counted).starts_with("body.pdf added to ticket #1"), "{counted:#?}");
    app.fake.wait_for_call("sendMessage", says(chat, "2 files so far"), DEADLINE).await;
    app.send_text(chat, "/done");

    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(job.submission.operation, Operation::Merge);
    let pages = pages_of(Path::new(job.result_path().expect("a result")));
    assert_eq!(pages.len(), 22, "1 + 1 + 20 pages, in the order sent: {pages:?}");
    assert_eq!(pages[1], Some(160), "{pages:?}");
    let jobs = app.store.jobs(&JobFilter { limit: 10, ..JobFilter::default() }).await.expect("store reads");
    assert_eq!(jobs.len(), 1, "the files are the merge's, not tickets of their own");
    let sealed = app.fake.wait_for_call("sendMessage", says(chat, "Got 3 files"), DEADLINE).await;
    assert!(text_of(&sealed).contains("cover.pdf, photo.jpg, body.pdf"), "{sealed:#?}");
    let results = app.fake.wait_for_calls("sendDocument", to_chat(chat), 1, DEADLINE).await;
    assert_eq!(results.len(), 1, "one result");
}

async fn the_done_button_under_a_count_finishes_the_merge(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 951;
    app.send_text(chat, "/merge");
    app.send(chat, upload::photo(jpeg(90, 60), 90, 60));
    app.send(chat, upload::photo(jpeg(60, 90), 60, 90));
    app.fake.wait_for_call("sendMessage", says(chat, "2 files so far"), DEADLINE).await;
    let counted = app.fake.last_bot_message(chat).and_then(|m| m["message_id"].as_i64()).expect("sent");
    assert_eq!(app.fake.button_labels(chat, counted), ["Done"]);
    app.fake.press_button_labelled(chat, chat, counted, "Done").expect("a Done button");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(pages_of(Path::new(job.result_path().expect("a result"))), vec![Some(90), Some(60)]);
}

async fn cancel_alone_drops_the_open_merge_and_done_without_one_says_so(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 952;
    app.send_text(chat, "/merge");
    app.send(chat, upload::photo(jpeg(40, 40), 40, 40));
    app.fake.wait_for_call("sendMessage", says(chat, "1 file so far"), DEADLINE).await;
    app.send_text(chat, "/cancel");
    app.fake.wait_for_call("sendMessage", says(chat, "was dropped"), DEADLINE).await;
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed, "{job:#?}");
    app.send_text(chat, "/done");
    app.fake.wait_for_call("sendMessage", says(chat, "No merge is open"), DEADLINE).await;
    // A file after that is a file of its own.
    app.send(chat, upload::photo(jpeg(30, 30), 30, 30));
    let own = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    assert_eq!((own.state, &own.submission.operation), (JobState::Ready, &Operation::ToPdf), "{own:#?}");
    let results = app.fake.wait_for_calls("sendDocument", to_chat(chat), 1, DEADLINE).await;
    assert_eq!(results.len(), 1, "only the file of its own gets a result: {results:#?}");
    // The dropped merge is not the chat's open one: /merge opens another.
    app.send_text(chat, "/merge");
    app.fake.wait_for_call("sendMessage", says(chat, "Ticket #3 is open"), DEADLINE).await;
}

async fn a_merge_takes_no_more_files_than_its_limit(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.limits.merge_files = 2).await;
    let chat = 953;
    app.send_text(chat, "/merge");
    for width in [50, 60, 70] {
        app.send(chat, upload::photo(jpeg(width, 40), width, 40));
    }
    let refused = app.fake.wait_for_call("sendMessage", says(chat, "was not added"), DEADLINE).await;
    assert!(text_of(&refused).contains("holds 2 files"), "{refused:#?}");
    app.send_text(chat, "/done");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(pages_of(Path::new(job.result_path().expect("a result"))), vec![Some(50), Some(60)]);
}

async fn one_file_captioned_merge_is_told_how_and_makes_no_ticket(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 954;
    app.send(chat, upload::pdf("pdf/text-1page.pdf", "alone.pdf").caption("merge"));
    let told = app.fake.wait_for_call("sendMessage", says(chat, "several files"), DEADLINE).await;
    assert!(text_of(&told).contains("/merge"), "{told:#?}");
    app.send(chat, upload::pdf("pdf/text-1page.pdf", "alone.pdf").caption("optimize"));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.submission.operation, Operation::Optimize, "the refused caption made no ticket: {job:#?}");
}
