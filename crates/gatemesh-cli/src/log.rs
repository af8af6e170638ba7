//! Where the long-running commands (`gatemesh server`, `gatemesh gate`) write their log.

/// How a service writes its log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON object a line, for a log collector.
    Json,
}

/// Logs to standard error (standard output carries the ready line), as text or one JSON
/// object a line; GATEMESH_LOG or RUST_LOG filters, in tracing's syntax (default `info`).
pub fn init(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("GATEMESH_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info"));
    use std::io::IsTerminal;
    // Colours only for a person at a terminal, not into a log file.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    // Only fails when a subscriber is already set (nothing else sets one).
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
