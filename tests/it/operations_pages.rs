//! `split`, `pages`, `text`, `info`, `rotate` and `decrypt` through `docket process`: the real
//! binary, its contained child, and the files they write.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use docket::domain::{Operation, Password};
use docket::operations::{self, Limits, Outcome, Report, Request, Work};

use crate::support::child::{self, stderr};
use crate::support::fixture;

/// `docket process IN --op WORDS… -o OUT` on a copy of the fixture `name`.
fn process(name: &str, op: &[&str], out_name: &str) -> (tempfile::TempDir, PathBuf, std::process::Output) {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.pdf");
    let output = dir.path().join(out_name);
    std::fs::write(&input, fixture(name)).expect("write");
    let mut args = vec!["process", input.to_str().expect("utf8"), "--op"];
    args.extend(op);
    args.extend(["-o", output.to_str().expect("utf8")]);
    let out = child::output(&args, None);
    (dir, output, out)
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn info_prints_the_facts() {
    let (_dir, _output, out) = process("pdf/text-20pages.pdf", &["info"], "info.json");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Pages: 20"), "{text}");
    assert!(text.contains("Producer: GPL Ghostscript"), "{text}");
    assert!(text.contains("Encryption: none"), "{text}");
    assert!(text.contains("SHA-256: "), "{text}");

    let (_dir, _output, out) = process("pdf/aes256-userpw.pdf", &["info"], "info.json");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Encryption: it needs a password to open"), "{}", stdout(&out));
}

#[test]
fn pages_and_split_through_the_cli() {
    let (_dir, output, out) = process("pdf/text-20pages.pdf", &["pages", "3,1"], "out.pdf");
    assert!(out.status.success(), "{}", stderr(&out));
    let document = lopdf::Document::load(&output).expect("a PDF");
    assert_eq!(document.get_pages().len(), 2);

    let (_dir, _output, out) = process("pdf/text-20pages.pdf", &["pages", "2,25"], "out.pdf");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("has no page 25: it has 20 pages"), "{}", stderr(&out));

    let (_dir, output, out) = process("pdf/text-20pages.pdf", &["split", "1-2,20"], "out.zip");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&output).expect("open")).expect("a ZIP");
    assert_eq!(archive.len(), 2);
    let mut bytes = Vec::new();
    archive.by_name("page-p020.pdf").expect("the last page").read_to_end(&mut bytes).expect("read");
    assert_eq!(lopdf::Document::load_mem(&bytes).expect("a PDF").get_pages().len(), 1);
}

/// Page `page` of the PDF at `path` as Poppler draws it: a small grey PGM.
fn rendered(path: &Path, page: u32) -> Vec<u8> {
    let page = page.to_string();
    let out = std::process::Command::new("pdftoppm")
        .args(["-r", "24", "-gray", "-f", &page, "-l", &page])
        .arg(path)
        .output()
        .expect("pdftoppm runs (poppler-utils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn every_part_of_a_split_draws_as_its_page_of_the_source() {
    for name in ["pdf/text-20pages.pdf", "pdf/scan-2pages.pdf", "pdf/aes256-ownerpw-only.pdf"] {
        let (dir, output, out) = process(name, &["split"], "out.zip");
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let source = dir.path().join("in.pdf");
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&output).expect("open")).expect("a ZIP");
        let pages = lopdf::Document::load(&source).expect("the source").get_pages().len();
        assert_eq!(archive.len(), pages, "{name}");
        for k in 0..archive.len() {
            let mut bytes = Vec::new();
            archive.by_index(k).expect("entry").read_to_end(&mut bytes).expect("read");
            let part = dir.path().join(format!("part-{k}.pdf"));
            std::fs::write(&part, &bytes).expect("write");
            let page = u32::try_from(k + 1).expect("few pages");
            assert!(rendered(&part, 1) == rendered(&source, page), "{name}: part {page} draws differently");
        }
    }
}

#[test]
fn text_and_rotate_through_the_cli() {
    let (_dir, output, out) = process("pdf/text-20pages.pdf", &["text"], "out.txt");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&output).expect("UTF-8 text");
    assert_eq!(text.matches('\x0c').count(), 19);
    assert!(text.contains("docket fixture, page 20"), "{text}");

    let (_dir, output, out) = process("pdf/scan-2pages.pdf", &["text"], "out.txt");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&output).expect("UTF-8 text");
    assert!(text.contains("page 2 has no text: it is an image; try ocr"), "{text}");

    let (_dir, output, out) = process("pdf/text-1page.pdf", &["rotate", "-90"], "out.pdf");
    assert!(out.status.success(), "{}", stderr(&out));
    let document = lopdf::Document::load(&output).expect("a PDF");
    let page = document.page_iter().next().expect("a page");
    assert_eq!(document.get_dictionary(page).expect("page").get(b"Rotate").expect("rotated").as_i64().ok(), Some(270));
}

#[test]
fn decrypt_with_the_right_password_and_refuse_a_wrong_one() {
    let (_dir, output, out) = process("pdf/aes256-userpw.pdf", &["decrypt", "secret"], "out.pdf");
    assert!(out.status.success(), "{}", stderr(&out));
    let document = lopdf::Document::load(&output).expect("a PDF");
    assert!(document.encryption_state.is_none() && !document.trailer.has(b"Encrypt"));

    let (_dir, _output, out) = process("pdf/aes256-userpw.pdf", &["decrypt", "guess"], "out.pdf");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("the password does not open"), "{}", stderr(&out));
}

/// Stands in for docket's binary: writes its arguments and its stdin beside itself, then
/// reports success as a child does.
fn recording_child(dir: &Path) -> PathBuf {
    let script = dir.join("child.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {dir}/args\ncat > {dir}/stdin\nprintf x > {dir}/out.pdf\n\
             echo '{{\"outcome\":\"done\",\"output_bytes\":1,\"pages\":1}}'\n",
            dir = dir.display()
        ),
    )
    .expect("write");
    let mut permissions = std::fs::metadata(&script).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    script
}

/// A request for `work` on `dir/in.pdf`, its result to `dir/output`.
fn request_in(dir: &Path, work: Work, output: &str) -> Request {
    Request {
        password: work.password(),
        work,
        input: dir.join("in.pdf"),
        output: dir.join(output),
        lang: operations::DEFAULT_LANG.into(),
        limits: Limits {
            memory: 1 << 30,
            timeout: Duration::from_secs(30),
            max_inflate: 1 << 20,
            max_file: 1 << 30,
            disk: 1 << 30,
            threads: 1,
        },
        scratch: None,
        shrink: operations::ShrinkSettings::default(),
        texts_lang: docket::texts::Lang::ENGLISH,
    }
}

#[tokio::test]
async fn the_password_goes_to_the_childs_stdin_and_never_on_its_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let program = recording_child(dir.path());
    let operation = Operation::Decrypt { password: Password::new("correct horse".into()) };
    let request = request_in(dir.path(), Work::Builtin(operation), "out.pdf");
    assert!(request.child_args().iter().all(|arg| !arg.to_string_lossy().contains("horse")));
    let outcome = operations::run_contained(&program, &request).await.expect("starts");
    assert!(matches!(outcome, Outcome::Reported(Report::Done { .. })), "{outcome:?}");
    let args = std::fs::read_to_string(dir.path().join("args")).expect("args");
    assert!(args.contains("decrypt") && !args.contains("horse"), "{args}");
    assert_eq!(std::fs::read_to_string(dir.path().join("stdin")).expect("stdin"), "correct horse");
}

#[tokio::test]
async fn a_child_that_reports_a_result_it_did_not_write_has_crashed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let program = recording_child(dir.path());
    // Not where the child writes.
    let request = request_in(dir.path(), Work::Builtin(Operation::Optimize), "elsewhere.pdf");
    let outcome = operations::run_contained(&program, &request).await.expect("starts");
    assert!(matches!(&outcome, Outcome::Crashed { detail } if detail.contains("did not write")), "{outcome:?}");
}
