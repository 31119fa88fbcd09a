//! What `docket check-config` prints: the effective configuration and whether each external
//! program it names can run here.

use std::path::Path;

use crate::config::Config;
use crate::operations::{self, Availability};

/// Comment lines on whether each external tool can run here, for `check-config`.
pub(super) fn tool_availability(config: &Config) -> String {
    let lines: Vec<String> = config
        .processing
        .tools()
        .iter()
        .map(|tool| match tool.availability() {
            Availability::Available(path) => {
                format!("# operation {:?}: available ({})", tool.name, path.display())
            }
            Availability::Unavailable(why) => format!("# {why}"),
        })
        .collect();
    let tools = if lines.is_empty() { "# no external operations configured".to_owned() } else { lines.join("\n") };
    let office = match operations::Office::find(&config.processing.soffice) {
        Availability::Available(path) => {
            format!("# office conversion (topdf): available, LibreOffice at {}", path.display())
        }
        Availability::Unavailable(why) => format!("# {why}"),
    };
    let preview = match config.processing.preview_renderer().map(operations::Renderer::find) {
        Some(Availability::Available(path)) => format!("# previews: available, MuPDF at {}", path.display()),
        Some(Availability::Unavailable(why)) => format!("# {why}"),
        None => "# previews: off ([processing] preview = false)".to_owned(),
    };
    format!("{tools}\n{office}\n{preview}")
}

/// What `check-config` prints: a comment saying the configuration is valid and where it came
/// from, `token` (a comment on where the bot token would come from, never the token), then the
/// whole effective configuration as TOML ([`Config::to_toml`]: every key, no password), which
/// can be saved and used as a config file.
pub(super) fn effective(config: &Config, path: Option<&Path>, token: &str) -> String {
    let origin = path.map_or_else(|| "no file, built-in defaults".to_owned(), |p| p.display().to_string());
    format!("# configuration is valid ({origin}); the effective settings:\n{token}\n\n{}", config.to_toml().trim_end())
}
