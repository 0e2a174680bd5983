//! The `matchmaking` binary: settings, telemetry, then [`matchmaking::App`] until
//! SIGTERM or SIGINT.

use std::time::Duration;

use anyhow::Context as _;
use basra_platform::{shutdown, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = matchmaking::settings::Settings::load().context("matchmaking settings")?;
    let _telemetry = telemetry::init("matchmaking", &settings.telemetry)?;
    let listen = settings.server.listen;
    let app = matchmaking::App::build(settings)
        .await
        .context("matchmaking")?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    app.run(listener, shutdown::on_signal()).await?;
    // Let the last log lines out.
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}
