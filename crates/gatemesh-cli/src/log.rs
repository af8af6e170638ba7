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

/// What is logged when neither GATEMESH_LOG nor RUST_LOG says: our `info`, and automerge's
/// warnings. automerge opens an `info` span for every column of every change it reads
/// (`#[tracing::instrument]`, whose level is `info` unless it says): logged, they were 5 %
/// of a gate's writer thread after a 32-gate partition healed, and say nothing to staff.
pub const DEFAULT_FILTER: &str = "info,automerge=warn";

/// Logs to standard error (standard output carries the ready line), as text or one JSON
/// object a line; GATEMESH_LOG or RUST_LOG filters, in tracing's syntax (default
/// [`DEFAULT_FILTER`]).
pub fn init(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("GATEMESH_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
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

#[cfg(test)]
mod tests {
    use tracing_subscriber::{EnvFilter, layer::SubscriberExt};

    /// Spans and events a subscriber was asked to open or log.
    #[derive(Default, Clone)]
    struct Seen(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let meta = attrs.metadata();
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", meta.target(), meta.name()));
        }

        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let meta = event.metadata();
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", meta.target(), meta.level()));
        }
    }

    #[test]
    fn the_default_filter_keeps_our_info_and_automerges_warnings_only() {
        let seen = Seen::default();
        let subscriber = tracing_subscriber::registry()
            .with(EnvFilter::new(super::DEFAULT_FILTER))
            .with(seen.clone());
        tracing::subscriber::with_default(subscriber, || {
            // As automerge's `#[tracing::instrument]` on reading a change's columns opens it.
            let _span =
                tracing::info_span!(target: "automerge::storage::columns", "add_column").entered();
            tracing::warn!(target: "automerge::storage::change", "unknown column");
            tracing::info!(target: "gatemesh_node::gate", "catching up");
            tracing::debug!(target: "gatemesh_node::gate", "a detail");
        });
        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                "automerge::storage::change WARN",
                "gatemesh_node::gate INFO"
            ]
        );
    }
}
