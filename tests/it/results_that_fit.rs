//! Results that fit: `split 10kB` sends parts each under the size as documents of their own, and
//! `/get` sends every part again; `shrink 30kB` steps down until the result fits, or says how
//! close it came.

use docket::domain::{JobState, MessageKind, Ticket};
use docket::store::MessageFilter;

use crate::per_backend;
use crate::support::calls::{says, text_of, to_chat, uploaded_name};
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp, eventually};

per_backend!(
    a_split_by_size_sends_each_part_as_its_own_document_and_get_sends_them_again,
    a_part_size_over_the_upload_limit_is_refused_with_the_limit,
    a_shrink_to_an_unreachable_size_says_how_small_it_got,
    a_result_too_big_offers_buttons_and_split_under_the_limit_sends_it_in_parts,
);

async fn a_split_by_size_sends_each_part_as_its_own_document_and_get_sends_them_again(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(700, upload::pdf("pdf/text-20pages.pdf", "report.pdf").caption("split 10kB").language("en"));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let count = job.result.as_ref().and_then(|r| r.parts).expect("a result in parts");
    assert!(count >= 2, "{count} parts");
    let sent = app.fake.wait_for_calls("sendDocument", to_chat(700), count as usize, DEADLINE).await;
    let mut pages = 0;
    for (i, call) in sent.iter().enumerate() {
        let upload = call.upload.as_ref().expect("each part is uploaded");
        assert!(upload.bytes.len() <= 10_000, "part {} is {} bytes", i + 1, upload.bytes.len());
        let part = lopdf::Document::load_mem(&upload.bytes).expect("each part is a PDF on its own");
        let name = uploaded_name(call).expect("a name");
        assert!(name.starts_with("report-p") && name.ends_with(".pdf"), "{name}");
        let caption = call.params["caption"].as_str().unwrap_or_default();
        assert!(caption.starts_with(&format!("Part {} of {count}. #1 ready: report.pdf", i + 1)), "{caption}");
        pages += part.get_pages().len();
    }
    assert_eq!(pages, 20, "every page is in one part");
    let job = app.store.job(Ticket(1)).await.expect("read").expect("the job");
    assert_eq!(job.result.and_then(|r| r.telegram_file_id), None, "no part's file_id stands for the result");

    app.send_text(700, "/get 1");
    let again = app.fake.wait_for_calls("sendDocument", to_chat(700), 2 * count as usize, DEADLINE).await;
    let first: Vec<&[u8]> =
        again[..count as usize].iter().map(|c| c.upload.as_ref().expect("upload").bytes.as_slice()).collect();
    let second: Vec<&[u8]> =
        again[count as usize..].iter().map(|c| c.upload.as_ref().expect("upload").bytes.as_slice()).collect();
    assert_eq!(first, second, "/get sends the same parts again, uploaded");
}

async fn a_part_size_over_the_upload_limit_is_refused_with_the_limit(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.limits.cloud_upload = 10_000).await;
    app.send(701, upload::pdf("pdf/text-20pages.pdf", "big.pdf").caption("split 1MB").language("en"));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed, "{job:#?}");
    let reason = job.error.unwrap_or_default();
    assert!(reason.starts_with("the result for big.pdf is"), "{reason}");
    assert!(reason.contains("over the 10.0 kB this bot can send"), "{reason}");
    assert!(app.fake.calls_to("sendDocument").is_empty(), "nothing half-made is sent");
}

async fn a_shrink_to_an_unreachable_size_says_how_small_it_got(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(702, upload::pdf("pdf/scan-2pages.pdf", "scan.pdf").caption("shrink 10kB").language("en"));
    let notice = app.fake.wait_for_call("sendMessage", says(702, "cannot be shrunk to 10.0 kB"), DEADLINE).await;
    assert!(text_of(&notice).contains("the smallest docket can make it is"), "{}", text_of(&notice));
    let job = app.store.job(Ticket(1)).await.expect("read").expect("the job");
    assert_eq!(job.state, JobState::Failed);
    assert!(app.fake.calls_to("sendDocument").is_empty(), "nothing half-made is sent");
}

async fn a_result_too_big_offers_buttons_and_split_under_the_limit_sends_it_in_parts(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.limits.cloud_upload = 10_000).await;
    app.send(703, upload::pdf("pdf/text-20pages.pdf", "long.pdf").caption("optimize").language("en"));
    let failed = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(failed.state, JobState::Failed, "{failed:#?}");
    let notice = eventually(DEADLINE, async || {
        let messages = app.store.messages(&MessageFilter::job(Ticket(1))).await.expect("read");
        messages
            .iter()
            .find(|m| m.kind == MessageKind::Failure)
            .and_then(|m| m.telegram_message_id)
            .map(|id| id.0)
            .ok_or_else(|| format!("no delivered failure notice: {messages:#?}"))
    })
    .await;
    assert_eq!(
        app.fake.button_labels(703, notice),
        ["Shrink to fit 10.0 kB", "Split into parts under 10.0 kB"],
        "the failure offers both ways to fit"
    );
    app.fake.press_button_labelled(703, 703, notice, "Split into parts under 10.0 kB").expect("the split button");
    let run = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    assert_eq!((run.state, run.submission.run_of), (JobState::Ready, Some(Ticket(1))), "{run:#?}");
    assert_eq!(run.submission.operation.to_string(), "split 10kB");
    let count = run.result.as_ref().and_then(|r| r.parts).expect("in parts");
    let sent = app.fake.wait_for_calls("sendDocument", to_chat(703), count as usize, DEADLINE).await;
    assert!(sent.iter().all(|c| c.upload.as_ref().is_some_and(|u| u.bytes.len() <= 10_000)), "each part fits");
}
