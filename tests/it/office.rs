//! Office documents out of the box: a Word, Excel, PowerPoint or OpenDocument file sent without a
//! caption comes back as a PDF made by LibreOffice (`soffice` on PATH), with its pages and its
//! text, two conversions at once each in a profile of its own; a damaged one fails with a reason
//! that names LibreOffice; on a host without LibreOffice the person is told this bot cannot
//! convert office files.

use docket::domain::{JobState, Operation, Ticket};

use crate::per_backend;
use crate::support::calls::{says, text_of, to_chat};
use crate::support::{Backend, DEADLINE, TestApp, fixture};

per_backend!(
    word_excel_powerpoint_and_opendocument_files_come_back_as_pdfs_of_their_pages_and_text,
    a_damaged_office_file_fails_with_a_reason_naming_libreoffice,
    without_libreoffice_an_office_file_is_refused_with_a_reason,
);

const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const PPTX: &str = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const ODT: &str = "application/vnd.oasis.opendocument.text";

/// The text of `pdf`, by Poppler's `pdftotext`, with its lines joined by spaces.
fn pdf_text(pdf: &[u8]) -> String {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("result.pdf");
    std::fs::write(&path, pdf).expect("written");
    let out = std::process::Command::new("pdftotext").arg(&path).arg("-").output().expect("pdftotext runs");
    assert!(out.status.success(), "pdftotext: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ")
}

async fn word_excel_powerpoint_and_opendocument_files_come_back_as_pdfs_of_their_pages_and_text(backend: Backend) {
    // Two processing workers, so conversions overlap: each must have a profile of its own.
    let app = TestApp::spawn_with(backend, |config| config.workers.process = 2).await;
    let documents = [
        (700, "office/report.docx", "report.docx", DOCX, 2, &["Quarterly report alpha", "Second page bravo"][..]),
        (701, "office/report.odt", "report.odt", ODT, 2, &["Quarterly report alpha", "Second page bravo"][..]),
        (702, "office/budget.xlsx", "budget.xlsx", XLSX, 1, &["Budget charlie", "42"][..]),
        (703, "office/slides.pptx", "slides.pptx", PPTX, 2, &["Slide one delta", "Slide two echo"][..]),
    ];
    for (chat, file, name, mime, _, _) in documents {
        app.send_document(chat, fixture(file), name, mime);
    }
    for (ticket, (chat, _, name, _, pages, words)) in documents.into_iter().enumerate() {
        let job = app.wait_for_job(Ticket(ticket as i64 + 1), |j| j.state.is_terminal()).await;
        assert_eq!(job.state, JobState::Ready, "{name}: {:?}", job.error);
        assert_eq!(job.submission.operation, Operation::ToPdf, "{name}: no caption, so topdf by its type");
        let sent = app.fake.wait_for_call("sendDocument", to_chat(chat), DEADLINE).await;
        let upload = sent.upload.expect("the PDF is uploaded");
        let sent_as = upload.file_name.clone().unwrap_or_default();
        assert!(sent_as.ends_with(".pdf"), "{name}: sent as {sent_as:?}");
        let pdf = lopdf::Document::load_mem(&upload.bytes).expect("a PDF");
        assert_eq!(pdf.get_pages().len(), pages, "{name}");
        let text = pdf_text(&upload.bytes);
        for word in words {
            assert!(text.contains(word), "{name}: {word:?} is not in {text:?}");
        }
    }
    // The runs' folders, the profiles in them included, are gone with their runs.
    let work = app.data_dir().join("work");
    let left: Vec<_> = std::fs::read_dir(&work).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "left in work/: {left:?}");
}

async fn a_damaged_office_file_fails_with_a_reason_naming_libreoffice(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    // The first entries are there (it is still a Word document by its content); the rest is cut.
    let mut damaged = fixture("office/report.docx");
    damaged.truncate(1800);
    app.send_document(710, damaged, "cut.docx", DOCX);
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed, "{job:?}");
    let notice = app.fake.wait_for_call("sendMessage", says(710, "failed"), DEADLINE).await;
    assert_eq!(text_of(&notice), "#1 failed: LibreOffice could not process cut.docx.");
}

async fn without_libreoffice_an_office_file_is_refused_with_a_reason(backend: Backend) {
    let app = TestApp::spawn_with(backend, |config| config.processing.soffice = "/nonexistent/soffice".into()).await;
    app.send_document(720, fixture("office/report.docx"), "report.docx", DOCX);
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed);
    let notice = app.fake.wait_for_call("sendMessage", says(720, "failed"), DEADLINE).await;
    assert_eq!(
        text_of(&notice),
        "#1 failed: report.docx was not converted: this bot cannot convert office files (Word, Excel, PowerPoint, \
         OpenDocument); please send it as a PDF."
    );
    // A picture still converts: only office files need LibreOffice.
    app.send_document(721, fixture("other/red-8x8.png"), "red.png", "image/png");
    let picture = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    assert_eq!(picture.state, JobState::Ready, "{:?}", picture.error);
}
