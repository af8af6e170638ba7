//! Exit codes: what a script can tell apart without reading the message.
//!
//! 0 success (a ticket admitted), 1 a ticket refused or a check failed (the command returns
//! that itself), 2 a usage error: the command line asked for something wrong (a bad value, a
//! file of the wrong kind, an output that already exists), 3 a runtime failure: the world
//! did not cooperate (a port in use, a database or server unreachable, a file missing or
//! unreadable). An error is a runtime failure unless the command marks it as [`Usage`].

use std::{fmt, process::ExitCode};

/// The exit codes, as `gatemesh --help` and the README list them.
pub const HELP: &str = "\
Exit codes:
  0  success (verify: every ticket admitted)
  1  a ticket refused (verify, decode) or a check failed
  2  usage error: a bad value, a file of the wrong kind, an output that already exists
  3  runtime failure: a port in use, a database or server unreachable, a file missing";

/// Exit code 2.
pub const USAGE: u8 = 2;
/// Exit code 3.
pub const RUNTIME: u8 = 3;

/// An error in what the command line asked for (exit code 2). It reads exactly like the
/// error it wraps.
#[derive(Debug)]
pub struct Usage(pub anyhow::Error);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Usage {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Marks an error as a usage error.
pub trait UsageExt<T> {
    /// This result's error, as a usage error (exit code 2).
    fn usage(self) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> UsageExt<T> for Result<T, E> {
    fn usage(self) -> anyhow::Result<T> {
        self.map_err(|e| anyhow::Error::new(Usage(e.into())))
    }
}

/// A usage error with this message.
macro_rules! usage {
    ($($t:tt)*) => {
        anyhow::Error::new($crate::exit::Usage(anyhow::anyhow!($($t)*)))
    };
}
pub(crate) use usage;

/// Returns a usage error with this message.
macro_rules! bail_usage {
    ($($t:tt)*) => {
        return Err($crate::exit::usage!($($t)*))
    };
}
pub(crate) use bail_usage;

/// Returns a usage error with this message unless `cond` holds.
macro_rules! ensure_usage {
    ($cond:expr, $($t:tt)*) => {
        if !$cond {
            $crate::exit::bail_usage!($($t)*);
        }
    };
}
pub(crate) use ensure_usage;

/// The exit code for an error: 2 when anything in its chain is a usage error, else 3.
pub fn code(e: &anyhow::Error) -> ExitCode {
    if e.chain().any(|c| c.is::<Usage>()) {
        ExitCode::from(USAGE)
    } else {
        ExitCode::from(RUNTIME)
    }
}
