//! `[processing]`: the limits every operation runs under, and `[processing.external.<name>]`,
//! operations backed by external programs.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DAY;
use super::value::{self, Between};
use crate::operations::ShrinkSettings;

/// `memory_limit` when not set: 2 GiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 2 * 1024 * 1024 * 1024;
/// `timeout` when not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// `max_inflate` when not set: 256 MiB.
pub const DEFAULT_MAX_INFLATE: u64 = 256 * 1024 * 1024;
/// `disk_limit` when not set: 4 GiB.
pub const DEFAULT_DISK_LIMIT: u64 = 4 * 1024 * 1024 * 1024;
/// The smallest `memory_limit` (and a tool's): the address space docket's own child takes before
/// it reads anything (its binary, and the 64 MiB stack of the lopdf thread), with room to work.
pub const MIN_MEMORY_LIMIT: u64 = 128 * 1024 * 1024;

/// `[processing]`: the limits every operation runs under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProcessingConfig {
    /// `memory_limit`: address space of the child process of one run; at least 128 MiB, and room
    /// for 4 × `max_inflate` beyond that.
    #[serde(deserialize_with = "memory_limit", serialize_with = "value::write_size")]
    pub memory_limit: u64,
    /// `timeout`: how long one run may take before its child is killed; 1 s to 1 day.
    #[serde(deserialize_with = "Between::<1, DAY>::duration", serialize_with = "value::write_duration")]
    pub timeout: Duration,
    /// `max_inflate`: the largest size one stream of a PDF may inflate to.
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub max_inflate: u64,
    /// `disk_limit`: the most one run may write to the data folder, its result and its
    /// scratch files together; never more than the free space above `[storage] min_free`.
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub disk_limit: u64,
    /// `shrink_dpi`: `shrink` downsamples images drawn at more than this resolution to it; 72
    /// to 600.
    #[serde(deserialize_with = "Between::<72, 600>::count")]
    pub shrink_dpi: u32,
    /// `jpeg_quality`: the quality of the JPEGs `shrink` writes; 10 to 95.
    #[serde(deserialize_with = "Between::<10, 95>::count")]
    pub jpeg_quality: u8,
    /// `external`: operations backed by programs, by name (`[processing.external.ocr]`).
    pub external: BTreeMap<String, ExternalToolConfig>,
    /// `default_operation`: what a document sent without a caption gets, in a chat that chose
    /// none with `/mode`; one of the operations without arguments. Default: "optimize".
    pub default_operation: String,
    /// `soffice`: LibreOffice's program, which `topdf` converts office documents with: a path,
    /// or a name looked up in `PATH`. Without it, office files are refused with a reason.
    /// Default: "soffice".
    pub soffice: String,
    /// `preview`: whether a PDF result is sent with its first page as the document's
    /// thumbnail, drawn by `renderer`. Default: true.
    pub preview: bool,
    /// `renderer`: MuPDF's `mutool`, which draws previews: a path, or a name looked up in
    /// `PATH`. Without it, results are sent without a preview. Default: "mutool".
    pub renderer: String,
}

impl Default for ProcessingConfig {
    fn default() -> Self {
        Self {
            memory_limit: DEFAULT_MEMORY_LIMIT,
            timeout: DEFAULT_TIMEOUT,
            max_inflate: DEFAULT_MAX_INFLATE,
            disk_limit: DEFAULT_DISK_LIMIT,
            shrink_dpi: ShrinkSettings::default().dpi,
            jpeg_quality: ShrinkSettings::default().jpeg_quality,
            external: BTreeMap::new(),
            default_operation: crate::operations::OPTIMIZE.to_owned(),
            soffice: crate::operations::office::DEFAULT_PROGRAM.to_owned(),
            preview: true,
            renderer: crate::operations::render::DEFAULT_PROGRAM.to_owned(),
        }
    }
}

/// `[processing.external.<name>]`: one operation backed by a program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalToolConfig {
    /// `command`: the program and its arguments, with `{input}`, `{output}` and `{lang}`
    /// placeholders; never run through a shell.
    #[serde(deserialize_with = "command")]
    pub command: Vec<String>,
    /// `accepts`: the formats it takes (`pdf`, `docx`, `odt`, `xlsx`, …).
    pub accepts: Vec<String>,
    /// `output`: the format it writes. Default: "pdf".
    #[serde(default = "pdf")]
    pub output: String,
    /// `memory_limit`: its own, instead of `[processing] memory_limit`.
    #[serde(default, with = "tool_memory_limit", skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
    /// `timeout`: its own, instead of `[processing] timeout`; 1 s to 1 day.
    #[serde(default, with = "tool_timeout", skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// `memory_factor`: peak memory per byte of input, reserved from `[budget] memory`; 1 to
    /// 1000. Default: 10.
    #[serde(default = "default_memory_factor", deserialize_with = "Between::<1, 1000>::ratio")]
    pub memory_factor: f64,
    /// `reach`: folders or files the program may read and write besides its own input, output
    /// and temporary folder and the system's programs and libraries (a wrapper's own folder
    /// under /opt, say). Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reach: Vec<std::path::PathBuf>,
}

fn pdf() -> String {
    "pdf".to_owned()
}

fn default_memory_factor() -> f64 {
    crate::operations::external::DEFAULT_TOOL_MEMORY_FACTOR
}

fn memory_limit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let bytes = value::size(d)?;
    if bytes < MIN_MEMORY_LIMIT {
        return Err(serde::de::Error::custom("a size of at least \"128 MiB\", such as \"2 GiB\""));
    }
    Ok(bytes)
}

/// A tool's own `memory_limit`, as `[processing] memory_limit` reads and writes it.
mod tool_memory_limit {
    pub(super) use crate::config::value::write_optional_size as serialize;

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        super::memory_limit(d).map(Some)
    }
}

/// A tool's own `timeout`: 1 s to 1 day.
mod tool_timeout {
    use std::time::Duration;

    use crate::config::DAY;
    use crate::config::value::Between;

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Between::<1, DAY>::duration(d).map(Some)
    }

    pub(super) fn serialize<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => crate::config::value::write_duration(d, s),
            None => s.serialize_none(),
        }
    }
}

fn command<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let command = Vec::<String>::deserialize(d)?;
    if command.first().is_none_or(|program| program.trim().is_empty()) {
        return Err(serde::de::Error::custom(
            "a list of the program and its arguments, such as [\"ocrmypdf\", \"{input}\", \"{output}\"]",
        ));
    }
    Ok(command)
}

impl ProcessingConfig {
    /// The program that draws previews (`renderer`) when `preview` is on; `None` when they are
    /// off.
    pub fn preview_renderer(&self) -> Option<&str> {
        self.preview.then_some(self.renderer.as_str())
    }

    /// The operation of `default_operation` (checked: optimize when it names none).
    pub fn default_operation(&self) -> crate::domain::Operation {
        crate::domain::Operation::mode(&self.default_operation).unwrap_or(crate::domain::Operation::Optimize)
    }

    /// Names of external operations that clash with a built-in one, and an inflate cap the
    /// memory limit cannot hold, as problems.
    pub(super) fn check(&self, problems: &mut Vec<super::Problem>) {
        // Inflating grows its buffer by doubling and copies on the way: up to about three times
        // the cap at once, beside the child's own base and the document around it.
        if self.max_inflate.saturating_mul(4).saturating_add(MIN_MEMORY_LIMIT) > self.memory_limit {
            problems.push(super::Problem {
                key: "[processing] max_inflate".into(),
                found: format!("{:?}", super::value::human_size(self.max_inflate)),
                expected: format!(
                    "at most a quarter of what [processing] memory_limit ({:?}) leaves beyond 128 MiB, or \
                     a stream that inflates to near the cap fails as out of memory instead",
                    super::value::human_size(self.memory_limit)
                ),
            });
        }
        if crate::domain::Operation::mode(&self.default_operation).is_none() {
            problems.push(super::Problem {
                key: "[processing] default_operation".into(),
                found: format!("{:?}", self.default_operation),
                expected: format!(
                    "one of the operations that need no arguments: {}",
                    crate::domain::Operation::MODES.join(", ")
                ),
            });
        }
        for name in self.external.keys() {
            if name == crate::operations::OPTIMIZE {
                problems.push(super::Problem {
                    key: format!("[processing.external.{name}]"),
                    found: name.clone(),
                    expected: "a name other than the built-in operation optimize".into(),
                });
            }
        }
    }
}
