//! `game-session`: settings, telemetry, then [`game_session::App`] until SIGTERM/SIGINT.

use anyhow::Context as _;

/// mimalloc instead of glibc malloc: at a thousand open streams, glibc's malloc and free
/// took about a quarter of the replica's CPU (README, "Performance").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = game_session::Settings::load().context("game-session settings")?;
    let _telemetry = basra_platform::telemetry::init("game-session", &settings.telemetry)?;
    let listen = settings.server.listen;
    let app = game_session::App::build(settings)
        .await
        .context("game-session")?;
    let listener = basra_platform::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    app.run(listener, basra_platform::shutdown::on_signal())
        .await?;
    Ok(())
}
