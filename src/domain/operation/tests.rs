//! The words of operations, read and written back.

use super::*;
use crate::domain::SizeTarget;

fn parse(words: &str) -> Operation {
    Operation::parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

#[test]
fn captions_name_operations_and_their_arguments() {
    assert_eq!(parse("optimize"), Operation::Optimize);
    assert_eq!(parse("  Shrink "), Operation::Shrink { target: None });
    assert_eq!(parse("shrink 10MB"), Operation::Shrink { target: Some(SizeTarget::bytes(10_000_000)) });
    assert_eq!(parse("shrink 1.5 mb").to_string(), "shrink 1500kB");
    assert_eq!(parse("split 45MB"), Operation::SplitBySize { under: SizeTarget::bytes(45_000_000) });
    assert_eq!(parse("split 45 MB").output(), Output::Parts);
    assert_eq!(parse("split 2-5").output(), Output::Zip);
    assert_eq!(parse("/split"), Operation::Split { ranges: None });
    assert_eq!(parse("split 1-3,7").arguments(), "1-3,7");
    assert_eq!(parse("pages 2-10").to_string(), "pages 2-10");
    assert_eq!(parse("rotate 90"), Operation::Rotate { angle: Angle::Quarter, pages: None });
    assert_eq!(parse("rotate 180 2,4").to_string(), "rotate 180 2,4");
    assert_eq!(parse("rotate -90").to_string(), "rotate 270");
    assert_eq!(parse("ocr"), Operation::Ocr { languages: None });
    assert_eq!(parse("ocr RUS+eng").arguments(), "rus+eng");
    assert_eq!(parse("text").output(), Output::Text);
    assert_eq!(parse("info").output(), Output::Message);
    assert_eq!(parse("split").output(), Output::Zip);
    assert_eq!(parse("topdf"), Operation::ToPdf);
}

#[test]
fn every_name_parses_to_itself() {
    for name in Operation::NAMES {
        let words = match name {
            "pages" => "pages 1",
            "rotate" => "rotate 90",
            other => other,
        };
        assert_eq!(parse(words).name(), name);
    }
}

#[test]
fn stored_form_gives_the_operation_back() {
    for words in [
        "optimize",
        "shrink 10MB",
        "split",
        "split 45MB",
        "split 1-3,7,10-",
        "pages 2",
        "rotate 270 1-2",
        "ocr rus+eng",
        "info",
    ] {
        let operation = parse(words);
        let stored = Operation::from_stored(operation.name(), &operation.arguments());
        assert_eq!(stored, Ok(operation), "{words}");
    }
    assert!(Operation::from_stored("rotate 90", "").is_err(), "a name is one word");
}

#[test]
fn a_password_is_never_shown_nor_stored_with_the_arguments() {
    let operation = parse("decrypt correct horse battery");
    let Operation::Decrypt { password } = &operation else { panic!("{operation:?}") };
    assert_eq!(password.expose(), "correct horse battery");
    for shown in [format!("{operation:?}"), operation.to_string(), operation.arguments(), format!("{password}")] {
        assert!(!shown.contains("horse"), "{shown}");
    }
    assert_eq!(
        Operation::from_stored("decrypt", ""),
        Ok(Operation::Decrypt { password: Password::new(String::new()) })
    );
}

#[test]
fn wrong_words_say_what_is_wrong() {
    assert_eq!(Operation::parse(""), Err(ParseError::Empty));
    assert_eq!(Operation::parse("please shrink"), Err(ParseError::Unknown("please".into())));
    let problem = |words| match Operation::parse(words) {
        Err(ParseError::Arguments { problem, .. }) => problem,
        other => panic!("{words}: {other:?}"),
    };
    assert_eq!(problem("pages"), ArgumentProblem::Missing);
    assert_eq!(problem("pages 1 2"), ArgumentProblem::Unexpected);
    assert_eq!(problem("shrink more"), ArgumentProblem::Size);
    assert_eq!(problem("pages a-b"), ArgumentProblem::Pages);
    assert_eq!(problem("pages 1,,2"), ArgumentProblem::Pages);
    assert_eq!(problem("pages 0"), ArgumentProblem::PageOrder);
    assert_eq!(problem("pages 5-2"), ArgumentProblem::PageOrder);
    assert_eq!(problem("rotate 45"), ArgumentProblem::Angle);
    assert_eq!(problem("ocr ru;rm"), ArgumentProblem::Languages);
    assert_eq!(problem("ocr e"), ArgumentProblem::Languages);
    assert_eq!(problem("shrink 10 pages"), ArgumentProblem::Size);
    assert_eq!(problem("shrink 10B"), ArgumentProblem::SizeTooSmall);
    assert_eq!(problem("split 1.2.3MB"), ArgumentProblem::Size);
    assert_eq!(problem("split 2-5 7"), ArgumentProblem::Unexpected);
}

#[test]
fn modes_are_the_operations_without_arguments() {
    for name in Operation::MODES {
        let operation = Operation::mode(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!((operation.name(), operation.arguments()), (name, String::new()));
    }
    assert_eq!(Operation::mode(" Shrink "), Some(Operation::Shrink { target: None }));
    for not_a_mode in ["pages", "rotate", "decrypt", "topdf", "sharpen", ""] {
        assert_eq!(Operation::mode(not_a_mode), None, "{not_a_mode}");
    }
}

#[test]
fn page_lists_resolve_against_the_document() {
    let ranges: PageRanges = "3,1-2,4-".parse().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ranges.resolve(5), Ok(vec![vec![3], vec![1, 2], vec![4, 5]]));
    assert_eq!(ranges.resolve(2), Err(3));
    let beyond: PageRanges = "2-9".parse().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(beyond.resolve(4), Err(9));
    let too_many = vec!["1"; MAX_RANGES + 1].join(",");
    assert_eq!(too_many.parse::<PageRanges>(), Err(ArgumentProblem::Pages));
}
