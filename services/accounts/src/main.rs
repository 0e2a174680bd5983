//! The `accounts` binary: settings, telemetry, then [`accounts::App`] until SIGTERM or
//! SIGINT. `accounts migrate` applies the database migrations and exits.

use anyhow::Context as _;
use basra_platform::{shutdown, telemetry};

/// mimalloc instead of glibc malloc: glibc kept the freed 19 MiB buffers of password
/// hashes in per-thread arenas, so a flood of wrong passwords left the process hundreds
/// of MiB larger for good (docs/performance.md, "Password hashing").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = accounts::Settings::load().context("accounts settings")?;
    let _telemetry = telemetry::init("accounts", &settings.telemetry)?;
    if std::env::args().nth(1).as_deref() == Some("migrate") {
        return accounts::migrate(&settings)
            .await
            .context("accounts migrate");
    }
    let listen = settings.server.listen;
    // Store and key first: a bad database URL or key file stops the service before a
    // socket is bound.
    let app = accounts::App::build(settings).await.context("accounts")?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    app.run(listener, shutdown::on_signal()).await?;
    Ok(())
}
