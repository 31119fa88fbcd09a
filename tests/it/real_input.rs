//! What real Telegram clients send, beyond a well-formed PDF: forwarded files with an empty
//! `mime_type`, stickers, voice notes, locations, edited messages (update kinds docket does not
//! know arrive by webhook in `webhook.rs`). Each is recorded and confirmed, and a person is always answered.

use docket::domain::{JobState, Ticket};
use serde_json::{Value, json};

use crate::per_backend;
use crate::support::calls::{text_of, to_chat};
use crate::support::{Backend, DEADLINE, TestApp, eventually, files_under, fixture, logs};

per_backend!(
    a_forwarded_file_with_an_empty_mime_type_gets_its_ticket_and_result,
    stickers_voice_notes_and_locations_are_answered_in_the_senders_language,
    a_document_put_into_an_edited_message_is_a_new_submission,
    file_names_are_data_never_paths,
);

/// A message update from `chat` (user = chat) whose content is `content`.
fn message_update(app: &TestApp, chat: i64, content: Value) -> Value {
    let mut update = app.fake.text_update(chat, chat, "placeholder");
    let message = update["message"].as_object_mut().expect("a message");
    message.remove("text");
    message.extend(content.as_object().expect("an object").clone());
    update
}

async fn a_forwarded_file_with_an_empty_mime_type_gets_its_ticket_and_result(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    // As forwarded files and some clients send it: the field is there, and empty.
    let mut update = app.fake.document_update(310, 310, &file, Some("forwarded.pdf"), Some(""));
    update["message"]["forward_origin"] = json!({"type": "hidden_user", "date": 1, "sender_user_name": "X"});
    app.fake.push_update(update);

    let ticket = app.fake.wait_for_call("sendMessage", to_chat(310), DEADLINE).await;
    assert!(text_of(&ticket).contains("forwarded.pdf") && text_of(&ticket).contains("#1"), "{}", text_of(&ticket));
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    app.fake.wait_for_call("sendDocument", |c| to_chat(310)(c) && c.status == 200, DEADLINE).await;
}

async fn stickers_voice_notes_and_locations_are_answered_in_the_senders_language(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let sticker = json!({"sticker": {"file_id": "S", "file_unique_id": "SU", "type": "regular",
        "width": 512, "height": 512, "is_animated": false, "is_video": false}});
    let voice = json!({"voice": {"file_id": "V", "file_unique_id": "VU", "duration": 3}});
    let location = json!({"location": {"latitude": 55.75, "longitude": 37.62}});
    let cases = [
        (320, sticker, "Со стикерами я не работаю"),
        (321, voice, "I cannot work on voice messages"),
        (322, location, "I cannot work on locations"),
    ];
    for (chat, content, _) in &cases {
        let mut update = message_update(&app, *chat, content.clone());
        if *chat == 320 {
            update["message"]["from"]["language_code"] = json!("ru");
        }
        app.fake.push_update(update);
    }
    for (chat, _, expected) in cases {
        let answer = app.fake.wait_for_call("sendMessage", to_chat(chat), DEADLINE).await;
        let text = text_of(&answer);
        assert!(text.contains(expected), "chat {chat}: {text}");
        assert!(text.contains("PDF"), "says what docket takes: {text}");
    }
    eventually(DEADLINE, async || {
        let logs = logs::captured();
        let kinds = ["kind=\"sticker\"", "kind=\"voice\"", "kind=\"location\""];
        match kinds.iter().find(|k| !logs.contains(*k)) {
            None => Ok(()),
            Some(missing) => Err(format!("no log line with {missing}")),
        }
    })
    .await;
}

async fn a_document_put_into_an_edited_message_is_a_new_submission(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let (first, _) = app.first_pdf_ready(340, "first.pdf").await;
    let second = app.fake.add_file(fixture("pdf/text-20pages.pdf"));
    let mut edited = app.fake.document_update(340, 340, &second, Some("second.pdf"), Some("application/pdf"));
    let mut message = edited["message"].take();
    message["edit_date"] = json!(1_700_000_100);
    assert_ne!(first.file_unique_id, second.file_unique_id);
    app.fake.push_update(json!({ "edited_message": message }));
    let job = app.wait_for_job(Ticket(2), |j| j.state == JobState::Ready).await;
    assert_eq!(job.submission.declared_name.as_deref(), Some("second.pdf"));
}

/// Whether `text` holds a character no name may show: a control or a direction override.
fn has_hidden_characters(text: &str) -> bool {
    text.chars().any(|c| (c.is_control() && c != '\n') || ('\u{202A}'..='\u{202E}').contains(&c))
}

async fn file_names_are_data_never_paths(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let names = [
        "../../../escape.pdf".to_owned(),
        "/etc/passwd".to_owned(),
        "nul\u{0}byte\r\n.pdf".to_owned(),
        "invoice\u{202E}fdp.exe".to_owned(),
        format!("{}.pdf", "Отчёт".repeat(30)),
        format!("{}.pdf", "🦀".repeat(80)),
    ];
    let pdf = fixture("pdf/text-1page.pdf");
    for (chat, name) in (360..).zip(&names) {
        app.send_document(chat, pdf.clone(), name, "application/pdf");
    }
    for (chat, name) in (360..).zip(&names) {
        let ticket = app.fake.wait_for_call("sendMessage", to_chat(chat), DEADLINE).await;
        let text = text_of(&ticket);
        assert!(!has_hidden_characters(&text), "{name:?} shown as {text:?}");
        assert!(text.chars().count() < 400, "{name:?} shown whole: {text:?}");
        let sent = app.fake.wait_for_call("sendDocument", |c| to_chat(chat)(c) && c.status == 200, DEADLINE).await;
        let given = sent.upload.and_then(|u| u.file_name).expect("the result has a name");
        assert!(
            !given.contains(['/', '\\'])
                && !has_hidden_characters(&given)
                && given.len() <= 255
                && given.ends_with(".pdf"),
            "{name:?} became {given:?}"
        );
    }
    // Everything docket wrote is under the data folder (or the database's), named by ticket.
    let root = app.data_dir().parent().expect("the test's folder").to_path_buf();
    for file in files_under(&root) {
        let rel = file.strip_prefix(&root).expect("under the root");
        assert!(rel.starts_with("data") || rel.starts_with("db"), "written outside data_dir: {}", rel.display());
        let shown = rel.to_string_lossy();
        assert!(!["escape", "passwd", "nul", "invoice", "Отчёт", "🦀"].iter().any(|n| shown.contains(n)), "{shown}");
    }
    assert!(!root.parent().expect("temp").join("escape.pdf").exists());
}
