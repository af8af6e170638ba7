//! What stops a long-running command: Ctrl-C, or SIGTERM (what a service manager, a CI's
//! time limit or a plain `kill` sends). Without a handler SIGTERM ends the process at once,
//! leaving a rehearsal's gates, servers and network namespaces behind.

/// Completes once the process is asked to stop: SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn asked() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let terminated = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated => {}
    }
}
