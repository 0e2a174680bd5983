//! Graceful stop: SIGTERM (Kubernetes) or SIGINT (Ctrl-C) cancels a token
//! that the server, and anything else long-running, watches.

use tokio_util::sync::CancellationToken;

/// A token cancelled on the first SIGTERM or SIGINT.
///
/// Call it from inside the Tokio runtime (it spawns the task that waits for
/// the signals), once, early in `main`. Pass clones to whatever must stop.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let signal = wait_for_signal().await;
        tracing::info!(signal, "shutdown signal received");
        cancel.cancel();
    });
    token
}

/// The name of the first signal received.
#[cfg(unix)]
async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};

    match signal(SignalKind::terminate()) {
        Ok(mut sigterm) => tokio::select! {
            _ = sigterm.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        },
        Err(err) => {
            tracing::error!(error = %err, "cannot listen for SIGTERM; only SIGINT stops the server");
            wait_for_ctrl_c().await
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> &'static str {
    wait_for_ctrl_c().await
}

async fn wait_for_ctrl_c() -> &'static str {
    if let Err(err) = tokio::signal::ctrl_c().await {
        tracing::error!(error = %err, "cannot listen for SIGINT; the server stops only when killed");
        std::future::pending::<()>().await;
    }
    "SIGINT"
}
