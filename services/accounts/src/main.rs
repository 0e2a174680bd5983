//! The `accounts` binary: settings, telemetry, store and key, then serve until
//! SIGTERM or SIGINT. `accounts migrate` applies the database migrations and exits.

use anyhow::Context as _;
use basra_platform::{shutdown, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = match accounts::Settings::load() {
        Ok(settings) => settings,
        Err(err) => {
            eprintln!("accounts: {err}");
            std::process::exit(2);
        }
    };
    let _telemetry = telemetry::init("accounts", &settings.telemetry)?;
    // `accounts migrate`: the migrations alone (the deployment's Job), then exit.
    if std::env::args().nth(1).as_deref() == Some("migrate") {
        return accounts::migrate(&settings)
            .await
            .context("cannot migrate the accounts database");
    }
    // Store and key first: a bad database URL or key file stops the service
    // before it accepts a single call.
    let app = accounts::App::build(&settings)
        .await
        .context("cannot start the accounts service")?;
    let listener = tokio::net::TcpListener::bind(settings.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.server.listen))?;
    app.run(listener, shutdown::on_signal()).await?;
    Ok(())
}
