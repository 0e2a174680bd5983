//! `game-session`: loads the settings, starts telemetry and serves until SIGTERM/SIGINT.

use anyhow::Context as _;

/// mimalloc instead of glibc malloc: at a thousand open streams, glibc's malloc and free
/// took about a quarter of the replica's CPU (README, "Performance").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = game_session::Settings::load().context("game-session settings")?;
    let _telemetry = basra_platform::telemetry::init("game-session", &settings.telemetry)
        .context("telemetry")?;
    let listener = tokio::net::TcpListener::bind(settings.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.server.listen))?;
    let shutdown = basra_platform::shutdown::on_signal();
    game_session::run_with_settings(listener, &settings, shutdown)
        .await
        .context("game-session")?;
    Ok(())
}
