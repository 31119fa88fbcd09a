//! The tests of reading the configuration: every problem named, units, defaults, the effective
//! configuration read back, and the drift test that holds `config/docket.toml` to the built-in
//! defaults key by key.

use std::time::Duration;

use super::*;

fn problems(text: &str) -> Vec<Problem> {
    match Config::from_toml_str(text, None, None) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("expected invalid config, got {other:?}"),
    }
}

#[test]
fn webhook_mode_names_every_key_it_lacks_and_checks_their_values() {
    let keys: Vec<String> = problems("[telegram]\nmode = \"webhook\"\n").into_iter().map(|p| p.key).collect();
    assert_eq!(keys, ["[webhook] listen", "[webhook] public_url", "[webhook] secret_token_env"]);
    let p = problems("[telegram]\nmode = \"hook\"\n");
    assert_eq!(p[0].key, "[telegram] mode");
    let p = problems(
        "[webhook]\npublic_url = \"http://bot.example.com/hook\"\nsecret_token_env = \"has space\"\nmax_connections = 101\n",
    );
    let keys: Vec<&str> = p.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["[webhook] public_url", "[webhook] secret_token_env", "[webhook] max_connections"], "{p:?}");
    let ok = Config::from_toml_str(
        "[telegram]\nmode = \"webhook\"\n[webhook]\nlisten = \"127.0.0.1:8443\"\n\
         public_url = \"https://bot.example.com/hook\"\nsecret_token_env = \"HOOK_SECRET\"\n",
        None,
        None,
    )
    .expect("valid");
    assert_eq!(ok.telegram.mode, UpdateMode::Webhook);
    assert_eq!(ok.webhook.max_connections, webhook::DEFAULT_MAX_CONNECTIONS);
    // Polling ignores [webhook].
    assert!(Config::from_toml_str("[webhook]\nmax_connections = 5\n", None, None).is_ok());
}

#[test]
fn no_file_at_all_gives_working_defaults() {
    let c = Config::from_toml_str("", None, None).expect("defaults are valid");
    assert_eq!(c.storage.database_url, DatabaseUrl::Sqlite(PathBuf::from("data/docket.db")));
    assert_eq!(c.storage.data_dir, PathBuf::from("data"));
    assert_eq!(c.limits.cloud_download, 20 * 1024 * 1024);
    assert_eq!(c.limits.cloud_upload, 50_000_000);
    assert_eq!(c.download_limit(), 20 * 1024 * 1024);
    assert_eq!(c.retention.result_ttl, Duration::from_secs(7 * 86_400));
    assert_eq!(c.telegram.api_url.as_str(), "https://api.telegram.org/");
    assert!(c.access.allows(42));
}

#[test]
fn the_documented_example_is_valid() {
    let text = include_str!("../../config/docket.toml");
    let c = Config::from_toml_str(text, Some(Path::new("config/docket.toml")), None)
        .expect("config/docket.toml must validate");
    assert_eq!(c.telegram.mode, UpdateMode::Polling);
}

#[test]
fn every_problem_names_its_key_value_and_expectation() {
    let p = problems(
        r#"
        [workers]
        download = 0
        [limits]
        cloud_download = "twenty megs"
        [retention]
        result_ttl = "forever"
        [storage]
        database_url = "mysql://x"
        "#,
    );
    let text: Vec<String> = p.iter().map(ToString::to_string).collect();
    assert_eq!(p.len(), 4, "{text:#?}");
    assert!(text.iter().any(|t| t.starts_with("[workers] download = 0: expected a whole number from 1")));
    assert!(text.iter().any(|t| t.starts_with("[limits] cloud_download = \"twenty megs\": expected a size")));
    assert!(text.iter().any(|t| t.starts_with("[retention] result_ttl = \"forever\": expected a duration")));
    assert!(text.iter().any(|t| t.starts_with("[storage] database_url = \"mysql://x\"")));
}

#[test]
fn unknown_keys_and_sections_are_refused() {
    let p = problems("[workers]\ndownlaod = 3\n[telegarm]\nmode = \"polling\"\n");
    assert!(p.iter().any(|p| p.key == "[workers] downlaod"), "{p:?}");
    assert!(p.iter().any(|p| p.key == "telegarm"), "{p:?}");
}

#[test]
fn sizes_and_durations_take_human_units() {
    let c = Config::from_toml_str(
        "[limits]\ncloud_download = \"2 GB\"\nlocal_upload = \"1.5 GiB\"\n[retention]\nresult_ttl = \"30m\"\n",
        None,
        None,
    )
    .expect("valid");
    assert_eq!(c.limits.cloud_download, 2_000_000_000);
    assert_eq!(c.limits.local_upload, 1_610_612_736);
    assert_eq!(c.retention.result_ttl, Duration::from_secs(1800));
}

#[test]
fn the_group_mode_defaults_to_addressed_and_is_checked() {
    assert_eq!(Config::from_toml_str("", None, None).expect("valid").access.groups, GroupMode::Addressed);
    for (written, mode) in [("addressed", GroupMode::Addressed), ("all", GroupMode::All), ("off", GroupMode::Off)] {
        let c = Config::from_toml_str(&format!("[access]\ngroups = {written:?}\n"), None, None).expect("valid");
        assert_eq!(c.access.groups, mode);
        assert_eq!(mode.as_str(), written);
    }
    for bad in ["\"Addressed\"", "\"none\"", "true", "1"] {
        let p = problems(&format!("[access]\ngroups = {bad}\n"));
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].key, "[access] groups");
    }
}

#[test]
fn the_per_chat_queue_cap_defaults_to_50_and_is_checked() {
    assert_eq!(Config::from_toml_str("", None, None).expect("valid").limits.per_chat_queued, 50);
    let c = Config::from_toml_str("[limits]\nper_chat_queued = 3\n", None, None).expect("valid");
    assert_eq!(c.limits.per_chat_queued, 3);
    for bad in ["0", "-1", "100001", "\"many\"", "2.5"] {
        let p = problems(&format!("[limits]\nper_chat_queued = {bad}\n"));
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].key, "[limits] per_chat_queued");
        assert_eq!(p[0].expected, "a whole number from 1 to 100000");
    }
}

#[test]
fn external_tools_are_read_and_their_problems_named() {
    let c = Config::from_toml_str(
        "[processing]\nmemory_limit = \"4 GiB\"\n[processing.external.ocr]\n\
         command = [\"ocrmypdf\", \"-l\", \"{lang}\", \"{input}\", \"{output}\"]\naccepts = [\"pdf\"]\n\
         timeout = \"30m\"\n",
        None,
        None,
    )
    .expect("valid");
    let tools = c.processing.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!((tools[0].name.as_str(), tools[0].output.as_str()), ("ocr", "pdf"));
    assert_eq!(tools[0].timeout, Some(Duration::from_secs(1800)));
    assert_eq!(tools[0].memory_limit, None);
    let back = Config::from_toml_str(&c.to_toml(), None, None).expect("the written configuration is valid");
    assert_eq!(back, c);

    let p = problems("[processing.external.optimize]\ncommand = [\"x\"]\naccepts = [\"pdf\"]\n");
    assert_eq!(p[0].key, "[processing.external.optimize]", "{p:?}");
    let p = problems("[processing.external.ocr]\ncommand = []\naccepts = [\"pdf\"]\n");
    assert!(p[0].key.starts_with("[processing] external"), "{p:?}");
    let p = problems("[processing]\nshrink_dpi = 1000\njpeg_quality = 5\n");
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p.iter().any(|p| p.key.contains("shrink_dpi") && p.expected.contains("72 to 600")), "{p:?}");
    assert!(p.iter().any(|p| p.key.contains("jpeg_quality") && p.expected.contains("10 to 95")), "{p:?}");
    let p = problems("[processing]\nmemory_limit = \"256 MiB\"\nmax_inflate = \"64 MiB\"\n");
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].key, "[processing] max_inflate");
    let p = problems("[processing]\nmemory_limit = \"100 MiB\"\n");
    assert_eq!(p[0].key, "[processing] memory_limit", "{p:?}");
}

#[test]
fn local_api_switches_limits() {
    let c = Config::from_toml_str("[telegram]\nlocal_api = true\n", None, None).expect("valid");
    assert_eq!(c.download_limit(), 2_000_000_000);
    assert_eq!(c.upload_limit(), 2_000_000_000);
}

#[test]
fn api_url_env_wins_and_gets_a_trailing_slash() {
    let c = Config::from_toml_str(
        "[telegram]\napi_url = \"https://example.invalid/\"\n",
        None,
        Some("http://127.0.0.1:8081/custom"),
    )
    .expect("valid");
    assert_eq!(c.telegram.api_url.as_str(), "http://127.0.0.1:8081/custom/");
    let p = problems("[telegram]\napi_url = \"ftp://x\"\n");
    assert_eq!(p[0].key, "[telegram] api_url");
}

#[test]
fn an_empty_file_gives_the_built_in_defaults() {
    assert_eq!(Config::from_toml_str("", None, None).expect("valid"), Config::default());
}

#[test]
fn several_problems_in_one_section_are_all_reported() {
    let p = problems("[workers]\ndownlaod = 3\nproces = 2\nlease = \"1s\"\nper_chat = 0\nmax_attempts = 7\n");
    let keys: Vec<&str> = p.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(p.len(), 4, "{p:#?}");
    for key in ["[workers] downlaod", "[workers] proces", "[workers] lease", "[workers] per_chat"] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    let unknown = p.iter().find(|p| p.key == "[workers] proces").expect("reported");
    assert_eq!(unknown.expected, "one of the keys download, process, lease, max_attempts, shutdown_grace, per_chat");
    let lease = p.iter().find(|p| p.key == "[workers] lease").expect("reported");
    assert_eq!(
        lease.to_string(),
        "[workers] lease = \"1s\": expected a duration such as \"30s\", \"30m\" or \"7d\", from 2s to 1h"
    );
}

#[test]
fn a_section_that_is_not_a_table_is_named() {
    let p = problems("telegram = 1\n[workers]\ndownload = 0\n");
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p.iter().any(|p| p.to_string() == "telegram = 1: expected a [telegram] section"), "{p:#?}");
    assert!(p.iter().any(|p| p.key == "[workers] download"), "{p:#?}");
}

#[test]
fn a_date_is_refused_where_a_string_is_expected() {
    let p = problems("[storage]\ndata_dir = 1979-05-27T07:32:00Z\n");
    assert_eq!(p[0].to_string(), "[storage] data_dir = 1979-05-27T07:32:00Z: expected a string in quotes");
}

#[test]
fn keys_list_every_section_of_config_in_order() {
    let sections: Vec<&str> = Config::keys().iter().map(|(section, _)| *section).collect();
    assert_eq!(sections, read::keys_of::<Config>());
    assert!(Config::keys().iter().all(|(_, keys)| !keys.is_empty()));
}

#[test]
fn the_effective_configuration_reads_back_the_same() {
    let example = include_str!("../../config/docket.toml");
    let optional = "[telegram]\nlocal_api = true\nlocal_files_url = \"http://10.0.0.5:8088\"\n\
                    [retention]\nresults_bytes = \"1.5 GiB\"\n[metrics]\nlisten = \"127.0.0.1:9464\"\n\
                    [access]\nadmins = [1, 2]\ngroups = \"off\"\n[budget]\nmultiplier = 2.5\n\
                    [webhook]\nlisten = \"127.0.0.1:8443\"\n[processing.external.ocr]\ncommand = [\"ocrmypdf\"]\n\
                    accepts = [\"pdf\"]\nmemory_limit = \"1 GiB\"\ntimeout = \"30m\"\n";
    for text in ["", example, optional] {
        let config = Config::from_toml_str(text, None, None).expect("valid");
        let written = config.to_toml();
        let back = Config::from_toml_str(&written, None, None).expect("the written configuration is valid");
        assert_eq!(back, config, "{written}");
    }
    let written = Config::default().to_toml();
    assert!(written.contains("\n# local_files_url = (not set)\n"), "{written}");
    assert!(written.contains("\ncloud_download = \"20 MiB\"\n"), "{written}");
    assert!(written.contains("\nresult_ttl = \"7days\"\n"), "{written}");
}

#[test]
fn the_effective_configuration_hides_database_passwords() {
    let c = Config::from_toml_str(
        "[storage]\ndatabase_url = \"postgres://docket:hunter2@db/docket?sslpassword=hunter3\"\n",
        None,
        None,
    )
    .expect("valid");
    let written = c.to_toml();
    assert!(!written.contains("hunter"), "{written}");
    assert!(written.contains("database_url = \"postgres://docket:***@db/docket?sslpassword=***\""), "{written}");
}

/// A key by section: `("workers", "lease")`.
type Key = (String, String);

/// The keys `config/docket.toml` shows only as a comment (`# key = …`), by section, and the
/// comment lines above each key, set or commented.
fn documented(text: &str) -> (Vec<Key>, Vec<(Key, Vec<String>)>) {
    let (mut section, mut commented, mut blocks, mut block) = (String::new(), Vec::new(), Vec::new(), Vec::new());
    for line in text.lines().map(str::trim) {
        let key_of = |l: &str| {
            l.split_once(" = ")
                .map(|(k, _)| k.to_owned())
                .filter(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        };
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            block.clear();
        } else if let Some(key) = line.strip_prefix("# ").and_then(key_of) {
            commented.push((section.clone(), key.clone()));
            blocks.push(((section.clone(), key), std::mem::take(&mut block)));
        } else if let Some(comment) = line.strip_prefix('#') {
            block.push(comment.trim().to_owned());
        } else if let Some(key) = key_of(line) {
            blocks.push(((section.clone(), key), std::mem::take(&mut block)));
        } else {
            block.clear();
        }
    }
    (commented, blocks)
}

/// The drift test: `config/docket.toml` and the built-in defaults say the same, key by key.
/// A default changed without the example, or the example without the default, fails here;
/// so does a key the example does not document, or a "Default: …" comment that disagrees.
#[test]
fn the_documented_example_matches_the_built_in_defaults_key_by_key() {
    let text = include_str!("../../config/docket.toml");
    let written: Table = text.parse().expect("config/docket.toml is TOML");
    let example = Config::from_toml_str(text, None, None).expect("config/docket.toml is valid");
    let example = Table::try_from(&example).expect("the example can be written");
    let built_in = Table::try_from(Config::default()).expect("the defaults can be written");
    let (commented, blocks) = documented(text);
    let mut drift = Vec::new();
    for (section, keys) in Config::keys() {
        for key in keys {
            let name = format!("[{section}] {key}");
            let at = |t: &Table| t.get(section).and_then(|s| s.get(*key)).cloned();
            let (documented, default) = (at(&example), at(&built_in));
            let is_commented = commented.contains(&(section.to_owned(), (*key).to_owned()));
            match at(&written) {
                Some(_) if documented != default => drift.push(format!(
                    "{name}: config/docket.toml says {}, the built-in default is {}",
                    documented.map_or("nothing".into(), |v| v.to_string()),
                    default.map_or("nothing".into(), |v| v.to_string()),
                )),
                Some(_) => {}
                None if !is_commented => drift.push(format!("{name} is not in config/docket.toml at all")),
                // Left out (commented) only when there is no fixed default to write: an
                // optional key, the number of CPU cores, the machine's memory, or the
                // external tools (none by default; the example shows some, commented).
                None if default.is_some()
                    && !["[workers] process", "[budget] memory", "[processing] external"].contains(&name.as_str()) =>
                {
                    drift.push(format!(
                        "{name}: the built-in default is {}, but config/docket.toml leaves the key out",
                        default.map_or("nothing".into(), |v| v.to_string()),
                    ))
                }
                None => {}
            }
            let comments = blocks.iter().find(|(k, _)| k.0 == *section && k.1 == *key).map(|(_, c)| c.join(" "));
            let Some(said) = comments.as_deref().and_then(|c| c.rsplit_once("Default: ")).map(|(_, d)| d) else {
                drift.push(format!("{name}: no \"Default: …\" in the comment above it in config/docket.toml"));
                continue;
            };
            // A default spelled as TOML ("30s", 4, false) must be the value written below it.
            let said = said.split(". ").next().unwrap_or(said).trim_end_matches('.');
            if let (Ok(said), Some(value)) = (format!("v = {said}").parse::<Table>(), at(&written))
                && said["v"] != value
            {
                drift.push(format!("{name}: the comment says \"Default: {}\", the key says {value}", said["v"]));
            }
        }
    }
    assert!(drift.is_empty(), "config/docket.toml and the built-in defaults differ:\n  {}", drift.join("\n  "));
}
