//! Languages: every message in the chat's language (the sender's Telegram `language_code`, or
//! the `/lang` choice, which is kept), sizes with the language's units, English for a language
//! docket has no catalog file for, and the command list registered in every language at start.

use docket::domain::{ChatRef, JobState, MessageKind, Ticket};
use fake_bot_api::{Call, Fault};
use serde_json::Value;

use crate::per_backend;
use crate::support::{Backend, DEADLINE, TestApp, fixture};

per_backend!(
    a_russian_speaker_gets_russian_texts_with_russian_units,
    a_language_without_a_catalog_file_gets_english,
    lang_switches_the_chat_and_the_choice_survives_a_restart,
);

fn text_of(call: &Call) -> String {
    call.params["text"].as_str().or_else(|| call.params["caption"].as_str()).unwrap_or_default().to_owned()
}

fn says(chat: i64, words: &'static str) -> impl Fn(&Call) -> bool {
    move |c: &Call| c.params["chat_id"].as_i64() == Some(chat) && text_of(c).contains(words)
}

async fn a_russian_speaker_gets_russian_texts_with_russian_units(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.set_user_language(300, Some("ru-RU"));
    app.send_document(300, fixture("pdf/text-1page.pdf"), "договор.pdf", "application/pdf");
    let reply = app.fake.wait_for_call("sendMessage", says(300, "заявка"), DEADLINE).await;
    assert_eq!(text_of(&reply), "Получен договор.pdf (3,1 КБ) — заявка #1, в очереди.");

    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    let until = job.result.as_ref().expect("a result").expires_at.date_utc();
    let result = app.fake.wait_for_call("sendDocument", |c| c.params["chat_id"].as_i64() == Some(300), DEADLINE).await;
    let caption = text_of(&result);
    assert!(caption.starts_with("#1 готова: договор.pdf, 3,1 КБ → "), "{caption}");
    assert!(caption.ends_with(&format!(" КБ. Доступна до {until}.")), "{caption}");
    app.wait_until_messages(ChatRef(300), |m| {
        m.iter().any(|m| m.kind == MessageKind::Progress && m.body.ends_with(&format!("хранится до {until}.")))
    })
    .await;

    app.send_text(300, "/help");
    let help = app.fake.wait_for_call("sendMessage", says(300, "Как это работает:"), DEADLINE).await;
    assert!(text_of(&help).contains("Результаты хранятся 7 дней;"), "{}", text_of(&help));
    app.send_text(300, "/status 1");
    let status = app.fake.wait_for_call("sendMessage", says(300, "#1 — договор.pdf: готова"), DEADLINE).await;
    assert!(text_of(&status).contains("\nРазмер: 3,1 КБ\n"), "{}", text_of(&status));
    // Someone else's language is their own.
    app.send_text(301, "/jobs");
    let english = app.fake.wait_for_call("sendMessage", |c| c.params["chat_id"].as_i64() == Some(301), DEADLINE).await;
    assert_eq!(text_of(&english), "No tickets yet. Send me a PDF as a file to start.");
}

async fn a_language_without_a_catalog_file_gets_english(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.set_user_language(310, Some("de"));
    app.fake.set_user_language(311, None);
    app.send_document(310, fixture("pdf/text-1page.pdf"), "vertrag.pdf", "application/pdf");
    let reply = app.fake.wait_for_call("sendMessage", says(310, "ticket"), DEADLINE).await;
    assert_eq!(text_of(&reply), "Got vertrag.pdf (3.1 kB) — ticket #1, queued.");
    app.send_text(311, "/jobs");
    let answer = app.fake.wait_for_call("sendMessage", says(311, "No tickets yet"), DEADLINE).await;
    assert_eq!(text_of(&answer), "No tickets yet. Send me a PDF as a file to start.");
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
}

async fn lang_switches_the_chat_and_the_choice_survives_a_restart(backend: Backend) {
    let mut app = TestApp::spawn_with(backend, |_| {}).await;
    app.send_text(320, "/lang");
    app.fake.wait_for_call("sendMessage", says(320, "Choose the language"), DEADLINE).await;
    let question_id = app.fake.last_bot_message(320).and_then(|m| m["message_id"].as_i64()).expect("sent");
    assert_eq!(app.fake.button_labels(320, question_id), ["English", "Русский"]);

    let press = app.fake.press_button_labelled(320, 320, question_id, "Русский").expect("a Russian button");
    let chosen = app.fake.wait_for_call("sendMessage", says(320, "по-русски"), DEADLINE).await;
    assert_eq!(text_of(&chosen), "Хорошо, теперь я пишу по-русски.");
    crate::support::eventually(DEADLINE, async || {
        if app.fake.press_answered(&press) { Ok(()) } else { Err("the press is unanswered".to_owned()) }
    })
    .await;
    // The person's app still says English: the choice wins.
    app.send_text(320, "/jobs");
    app.fake.wait_for_call("sendMessage", says(320, "Заявок пока нет"), DEADLINE).await;

    app.stop().await;
    app.start().await;
    app.send_text(320, "/cancel");
    let usage = app.fake.wait_for_call("sendMessage", says(320, "/cancel 4812"), DEADLINE).await;
    assert_eq!(text_of(&usage), "Как пользоваться: /cancel 4812 (номер заявки из моего ответа).");

    // And back: the question is asked in the chat's language now.
    app.send_text(320, "/lang");
    app.fake.wait_for_call("sendMessage", says(320, "Выберите язык"), DEADLINE).await;
    let question_id = app.fake.last_bot_message(320).and_then(|m| m["message_id"].as_i64()).expect("sent");
    app.fake.press_button_labelled(320, 320, question_id, "English").expect("an English button");
    app.fake.wait_for_call("sendMessage", says(320, "From now on I write in English."), DEADLINE).await;
}

fn descriptions(commands: &Value) -> Vec<(String, String)> {
    commands
        .as_array()
        .expect("a list of commands")
        .iter()
        .map(|c| {
            (
                c["command"].as_str().unwrap_or_default().to_owned(),
                c["description"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_list_is_registered_in_every_language_at_start() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    let calls = app.fake.wait_for_calls("setMyCommands", |c| c.status == 200, 2, DEADLINE).await;
    let languages: Vec<Option<&str>> =
        calls.iter().map(|c| c.params.get("language_code").and_then(Value::as_str)).collect();
    assert_eq!(languages, [None, Some("ru")]);
    let english = descriptions(&app.fake.commands(None));
    let russian = descriptions(&app.fake.commands(Some("ru")));
    let names: Vec<&str> = english.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["start", "help", "status", "get", "jobs", "merge", "done", "cancel", "privacy", "forget", "lang"]
    );
    assert_eq!(russian.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), names);
    assert!(english.contains(&("lang".to_owned(), "Choose the language".to_owned())), "{english:?}");
    assert!(russian.contains(&("lang".to_owned(), "Выбрать язык".to_owned())), "{russian:?}");
    assert!(russian.contains(&("jobs".to_owned(), "Ваши последние заявки".to_owned())), "{russian:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_command_list_does_not_stop_the_bot() {
    let mut app = TestApp::create(Backend::Sqlite, |_| {}).await;
    app.fake.fail_next("setMyCommands", Fault::BadRequest("Bad Request: BOT_COMMAND_INVALID".into()));
    app.fake.fail_next("setMyCommands", Fault::BadRequest("Bad Request: BOT_COMMAND_INVALID".into()));
    app.start().await;
    app.send_text(330, "/jobs");
    app.fake.wait_for_call("sendMessage", says(330, "No tickets yet"), DEADLINE).await;
    let logs = crate::support::logs::captured();
    assert!(logs.contains("could not register the command list"), "{logs}");
}
