//! The signal that stops a production process: SIGINT (Ctrl-C) or SIGTERM (`kill`,
//! `timeout`, a CI runner's cancel, a service manager). Shared by the `node` binary and
//! the real-cluster `nemesis`, which stop the same way.

/// Resolves on the first SIGINT or SIGTERM. When SIGTERM cannot be watched (no signal
/// handler could be installed), `cannot_watch_sigterm` is told why and only SIGINT
/// stops the process.
pub async fn stop_signal(cannot_watch_sigterm: impl FnOnce(std::io::Error)) {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            let interrupt = Box::pin(tokio::signal::ctrl_c());
            let terminate = Box::pin(terminate.recv());
            futures::future::select(interrupt, terminate).await;
        }
        Err(error) => {
            cannot_watch_sigterm(error);
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
