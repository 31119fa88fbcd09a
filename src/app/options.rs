//! What [`start`](super::start) takes besides the configuration: the knobs that are not
//! configuration ([`Options`]: time, polling pace, the child's program) and where secrets named
//! by environment variable are read ([`Environment`]). Tests and benchmarks set them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::domain::{SharedClock, SystemClock};

/// Knobs that are not configuration: time and polling pace (tests move them).
#[derive(Debug, Clone)]
pub struct Options {
    /// Where "now" comes from.
    pub clock: SharedClock,
    /// How often idle workers look for retries that came due.
    pub idle_poll: Duration,
    /// First retry delay of jobs and messages.
    pub retry_base: Duration,
    /// How long a Bot API call may wait for its answer beyond the long poll's own wait; a send
    /// still unanswered then counts as lost (outcome unknown).
    pub answer_timeout: Duration,
    /// The program processing runs re-execute as their child (`docket process … --contained`):
    /// this binary ([`crate::operations::this_binary`]). Tests, whose own binary is not docket,
    /// name docket's.
    pub program: PathBuf,
    /// Where the secrets that keys name by environment variable are read
    /// (`[webhook] secret_token_env`, `[access] invite_tokens_env`).
    pub environment: Environment,
}

/// Reads environment variables: the process's own, or, in tests, a fixed set.
#[derive(Clone)]
pub struct Environment(Arc<Lookup>);

/// How an [`Environment`] looks a variable up.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Environment {
    /// The process's environment.
    pub fn process() -> Self {
        Self(Arc::new(|name| std::env::var(name).ok()))
    }

    /// Exactly these variables.
    pub fn fixed(vars: &[(&str, &str)]) -> Self {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Self(Arc::new(move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())))
    }

    /// The value of `name`, when set.
    pub fn var(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values are secrets.
        f.write_str("Environment")
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            idle_poll: Duration::from_secs(1),
            retry_base: Duration::from_secs(2),
            answer_timeout: Duration::from_secs(60),
            program: crate::operations::this_binary(),
            environment: Environment::process(),
        }
    }
}
