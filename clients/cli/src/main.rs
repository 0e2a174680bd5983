//! `basra`: play Basra in the terminal, run a bot, or answer rule questions.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use basra::input::ask;
use basra::lobby::{self, Seated};
use basra::player::{Driver, play_room};
use basra::session::{Session, device_id};
use basra_engine::bot::Policy;
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::matchmaking::v1::join_room_request::Target;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "basra",
    version,
    about = "Egyptian Basra online: play, bots and rules"
)]
struct Cli {
    /// Trust this CA certificate (PEM) for `https://` servers, besides the webpki roots
    /// (a private or development CA).
    #[arg(long, global = true, env = "BASRA_CA_FILE")]
    ca_file: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Connection {
    /// The backend's client endpoint (`basra dev` listens here by default).
    #[arg(
        long,
        global = true,
        env = "BASRA_SERVER",
        default_value = "http://127.0.0.1:50051"
    )]
    server: String,
    /// The name other players see.
    #[arg(long, global = true, default_value = "")]
    name: String,
    /// Sign in as this device's guest instead of this machine's (kept in ~/.config/basra).
    #[arg(long, global = true)]
    device_id: Option<String>,
    /// Sign in to this account (made with a password, in the web page's profile) instead
    /// of as a guest; the password is read from BASRA_PASSWORD.
    #[arg(
        long,
        global = true,
        env = "BASRA_USERNAME",
        conflicts_with = "device_id"
    )]
    username: Option<String>,
}

/// How to get a seat.
#[derive(Subcommand, Clone)]
enum Seat {
    /// A match against the computer.
    Computer {
        /// How strong the computer plays.
        #[arg(long, value_enum, default_value_t = Level::Medium)]
        level: Level,
    },
    /// A match from the queue (a bot fills in after a wait unless --no-bots).
    Quick {
        /// Play for rating.
        #[arg(long)]
        ranked: bool,
        /// Wait for a person, however long.
        #[arg(long)]
        no_bots: bool,
        /// 2 or 4 seats.
        #[arg(long, default_value_t = 2)]
        seats: u32,
    },
    /// Create a private room and show its code.
    Create {
        /// Points to win.
        #[arg(long)]
        target: Option<u32>,
    },
    /// Join a private room by its code (or a room by its id).
    Join {
        /// The code a friend gave you, or a room id.
        code: String,
    },
    /// Browse the public rooms and join one.
    Lobby,
}

#[derive(Subcommand)]
enum Command {
    /// Play in the terminal.
    Play {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        seat: Option<Seat>,
    },
    /// Run a headless bot (demos, load and soak runs).
    Bot {
        #[command(flatten)]
        connection: Connection,
        /// How the bot picks its cards.
        #[arg(long, value_enum, default_value_t = BotPolicy::Greedy)]
        policy: BotPolicy,
        /// The pause before each play, in milliseconds.
        #[arg(long, default_value_t = 300)]
        delay_ms: u64,
        /// How many matches to play (0: forever).
        #[arg(long, default_value_t = 1)]
        matches: u32,
        #[command(subcommand)]
        seat: Option<Seat>,
    },
    /// Run the whole backend in this process, on one port (in-memory stores by default).
    Dev {
        /// Where clients connect.
        #[arg(long, env = "BASRA_DEV_LISTEN", default_value = "127.0.0.1:50051")]
        listen: std::net::SocketAddr,
        /// Keep accounts in this PostgreSQL database instead of memory.
        #[arg(long, env = "BASRA_DEV_DATABASE_URL")]
        database_url: Option<String>,
        /// Keep rooms and the queue in this Redis instead of memory.
        #[arg(long, env = "BASRA_DEV_REDIS_URL")]
        redis_url: Option<String>,
        /// How long the computer thinks before each play, in milliseconds.
        #[arg(long)]
        bot_delay_ms: Option<u64>,
        /// Where the web client's page is served (`make web` builds it). Default
        /// 127.0.0.1:8080, or a free port when `--listen` asks for port 0.
        #[arg(long, env = "BASRA_DEV_WEB_LISTEN")]
        web_listen: Option<std::net::SocketAddr>,
        /// The built page (default: clients/web/dist of this source tree).
        #[arg(long, env = "BASRA_DEV_WEB_DIR")]
        web_dir: Option<std::path::PathBuf>,
        /// Serve TLS with this certificate (PEM, then any intermediates); needs --tls-key.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The certificate's private key (PEM).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// How many seconds past its expiry a token is still taken (default 30, for clock
        /// skew); 0 refuses an expired token at once, to try a client's refresh.
        #[arg(long)]
        token_leeway_seconds: Option<u64>,
    },
    /// Friends: list (with what each is doing), watch live, invite to your room, add (by
    /// username or friend code), accept, decline, cancel, remove, block, unblock.
    Friends {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: basra::friends::FriendsCommand,
    },
    /// Your inbox: the notices kept while you were away (list; read IDS or --all).
    Inbox {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: Option<basra::inbox::InboxCommand>,
    },
    /// Tournaments: list the events, join one (register, check in, play each match as it
    /// is ready), watch one live, its standings, withdraw.
    Tournament {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: basra::tournament::TournamentCommand,
    },
    /// Change the name other players see (a few times a week: the server says when).
    Name {
        #[command(flatten)]
        connection: Connection,
        /// The new name (1..24 characters; not one that passes for a bot or "Player N").
        #[arg(value_name = "NEW_NAME")]
        new_name: String,
    },
    /// Report a player to the moderators (their user id is shown at the match's end);
    /// you hear later that the report was handled.
    Report {
        #[command(flatten)]
        connection: Connection,
        /// The player's user id.
        user_id: String,
        /// Why.
        #[arg(long, value_enum)]
        reason: ReportReasonArg,
        /// The match it happened in.
        #[arg(long = "match", default_value = "")]
        match_id: String,
        /// What happened (up to 500 characters).
        #[arg(long, default_value = "")]
        comment: String,
    },
    /// Your profile: rating, tier, record, place on the leaderboard, best season finish.
    Profile {
        #[command(flatten)]
        connection: Connection,
    },
    /// The leaderboard of the current season, or of a finished one (`--season`), as it
    /// was kept at its end.
    Leaderboard {
        #[command(flatten)]
        connection: Connection,
        /// A season's id (`basra seasons` lists them); the current season without it.
        #[arg(long, value_name = "ID", default_value = "")]
        season: String,
        /// How many rows (at most 100).
        #[arg(long, default_value_t = 20)]
        rows: u32,
    },
    /// The rating seasons: the current one, the finished ones (their leaderboards are
    /// kept), the next one.
    Seasons {
        #[command(flatten)]
        connection: Connection,
    },
    /// Replay a finished match of yours move by move, with the analysis of your plays, or
    /// another's event match or match that allowed spectators (Enter: next event, p: play
    /// / pause, q: quit).
    Replay {
        #[command(flatten)]
        connection: Connection,
        /// The match (its id in your match history).
        match_id: String,
        /// The pause between events while playing.
        #[arg(long, default_value_t = 800)]
        delay_ms: u64,
    },
    /// Your account: export your data (one JSON document) or delete the account for good.
    Account {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: AccountCommand,
    },
    /// Answer rule questions: JSON lines on stdin (see docs/rules.md, "The rules tool").
    Rules,
    /// Analytics over match records (see libs/analytics/README.md).
    Analytics {
        #[command(subcommand)]
        command: basra::analytics::AnalyticsCommand,
    },
    /// Fill a deployment's match records with simulated matches: bots play through the
    /// services, or (--fast) the engine plays here and RecordMatches records them.
    Simulate(basra::analytics::SimulateArgs),
    /// Operate game-session: rooms, drains, operator tokens (deploy/README.md).
    Admin {
        /// Print one JSON document (for scripts) instead of text.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        command: AdminCommand,
    },
}

/// A service an operator command talks to: the variable and default of its address.
trait OperatorService {
    /// What `--server` is, for `--help`.
    const HELP: &'static str;
    /// The variable that sets `--server`.
    const ENV: &'static str;
    /// `--server` when neither says.
    const DEFAULT: &'static str;
}

/// game-session (`GameAdminService`).
struct GameSessionAdmin;

impl OperatorService for GameSessionAdmin {
    const HELP: &'static str =
        "A game-session replica's gRPC address (e.g. a `kubectl port-forward` to a pod)";
    const ENV: &'static str = "BASRA_ADMIN_SERVER";
    const DEFAULT: &'static str = "http://127.0.0.1:50053";
}

/// matchmaking (`EventAdminService`).
struct EventsAdmin;

impl OperatorService for EventsAdmin {
    const HELP: &'static str = "matchmaking's gRPC address (`basra dev`: its one port)";
    const ENV: &'static str = "BASRA_EVENTS_ADMIN_SERVER";
    const DEFAULT: &'static str = "http://127.0.0.1:50052";
}

/// accounts (`AccountsAdminService`).
struct AccountsAdmin;

impl OperatorService for AccountsAdmin {
    const HELP: &'static str = "accounts' gRPC address";
    const ENV: &'static str = "BASRA_ACCOUNTS_ADMIN_SERVER";
    const DEFAULT: &'static str = "http://127.0.0.1:50051";
}

/// Where an operator command reaches service `S`, and the operator token it shows.
#[derive(clap::Args)]
struct OperatorConnection<S: OperatorService> {
    #[arg(long, env = S::ENV, default_value = S::DEFAULT, help = S::HELP)]
    server: String,
    /// An operator token (`basra admin token`).
    #[arg(long, env = "BASRA_OPERATOR_TOKEN", hide_env_values = true)]
    token: String,
    #[arg(skip)]
    service: std::marker::PhantomData<S>,
}

/// game-session's rooms and drains.
type AdminConnection = OperatorConnection<GameSessionAdmin>;
/// matchmaking's events.
type EventConnection = OperatorConnection<EventsAdmin>;
/// accounts' players and reports.
type PlayerConnection = OperatorConnection<AccountsAdmin>;

#[derive(Subcommand)]
enum AdminCommand {
    /// Mint an operator token offline from the operator signing key; prints it.
    Token {
        /// The operator's PKCS#8 PEM Ed25519 private key.
        #[arg(long)]
        key_file: std::path::PathBuf,
        /// Its key id, as the services trust it.
        #[arg(long, default_value = "operator-o1")]
        kid: String,
        /// Who you are (1..64 characters): the audit of what the token does names you.
        #[arg(long)]
        operator: String,
        /// Lifetime in seconds (at most 3600).
        #[arg(long, default_value_t = 900)]
        ttl_seconds: u64,
        /// The tokens' issuer (`auth.issuer`).
        #[arg(long, default_value = "basra-accounts")]
        issuer: String,
        /// The tokens' audience (`auth.audience`).
        #[arg(long, default_value = "basra")]
        audience: String,
    },
    /// List rooms.
    Rooms {
        #[command(flatten)]
        connection: AdminConnection,
        /// Only rooms in this state: waiting, in-progress, finished, closed.
        #[arg(long)]
        status: Option<String>,
        /// Only rooms with a stream on this replica.
        #[arg(long, default_value = "")]
        replica: String,
        /// Only rooms where this user holds a seat.
        #[arg(long, default_value = "")]
        user: String,
    },
    /// Show one room: its public view and its streams (seat, user, replica).
    Room {
        #[command(flatten)]
        connection: AdminConnection,
        /// The room.
        room_id: String,
    },
    /// Close a room; a running match ends with no winner.
    Close {
        #[command(flatten)]
        connection: AdminConnection,
        /// The room.
        room_id: String,
        /// Why (required: the audit log keeps it, and the players of a running match
        /// are told it).
        #[arg(long)]
        reason: String,
    },
    /// Drain the replica at --server: no new streams, open ones end by the deadline.
    Drain {
        #[command(flatten)]
        connection: AdminConnection,
        /// Seconds the open streams get.
        #[arg(long, default_value_t = 30)]
        deadline_seconds: u64,
    },
    /// End a drain of the replica at --server: health SERVING, new streams and rooms
    /// welcome again.
    Undrain {
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Events (tournaments) through matchmaking: create, list, cancel.
    Tournament {
        #[command(subcommand)]
        command: TournamentAdminCommand,
    },
    /// Moderate a player through accounts (find, show, export, ban, unban, rename,
    /// delete), each but find audited.
    Player {
        #[command(flatten)]
        connection: PlayerConnection,
        #[command(subcommand)]
        command: PlayerCommand,
    },
    /// Reports of players through accounts: list the open ones, show one player's,
    /// resolve them (dismiss, rename, ban); showing and resolving are audited.
    Report {
        #[command(flatten)]
        connection: PlayerConnection,
        #[command(subcommand)]
        command: ReportCommand,
    },
}

#[derive(Subcommand)]
enum ReportCommand {
    /// The players with open reports, most distinct reporters first.
    List {
        /// The most players to list (0: the server's default, 50).
        #[arg(long, default_value_t = 0)]
        limit: u32,
    },
    /// One player's reports: the names they had, the matches, earlier actions.
    Show {
        /// The player's user id.
        user_id: String,
        /// Why (kept in the audit).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Resolve a player's open reports; each reporter is told it was handled.
    Resolve {
        /// The player's user id.
        user_id: String,
        /// What to do.
        #[arg(value_enum)]
        decision: basra::admin_report::Decision,
        /// Why (kept in the audit; told to the player for a ban).
        #[arg(long)]
        reason: String,
        /// rename: the new name (a neutral generated one without it).
        #[arg(long)]
        name: Option<String>,
        /// ban: for this many hours (for good without it).
        #[arg(long)]
        hours: Option<u64>,
    },
}

#[derive(Subcommand)]
enum TournamentAdminCommand {
    /// Create an event (once: --start-at or --in; recurring: --cron and --time-zone).
    Create {
        #[command(flatten)]
        connection: EventConnection,
        #[command(flatten)]
        args: basra::admin_tournament::CreateArgs,
    },
    /// List every event, newest start first.
    List {
        #[command(flatten)]
        connection: EventConnection,
    },
    /// Cancel an event: every registered player is told the reason.
    Cancel {
        #[command(flatten)]
        connection: EventConnection,
        /// The event.
        event_id: String,
        /// Why (told to the players).
        #[arg(long)]
        reason: String,
        /// End its recurring series too: every occurrence already made that has not
        /// started is cancelled (its players told) and no further one is made.
        #[arg(long)]
        series: bool,
    },
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Export everything the server holds about you, as one JSON document.
    Export {
        /// Where to write it (`-`: standard output).
        #[arg(long, default_value = "-")]
        out: String,
    },
    /// Delete your account for good, after you type DELETE to confirm.
    Delete,
}

#[derive(Subcommand)]
enum PlayerCommand {
    /// Find players by user id, username, friend code or part of a display name.
    Find {
        /// What to look for.
        query: String,
        /// The most players to list (0: the server's default, 20).
        #[arg(long, default_value_t = 0)]
        limit: u32,
    },
    /// Show a player: profile, ban, friends, recent matches, sign-ins, audit.
    Show {
        /// The player's user id.
        user_id: String,
        /// Why (kept in the audit).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Export a player's data on their behalf (the document ExportMyData gives them).
    Export {
        /// The player's user id.
        user_id: String,
        /// Why (kept in the audit), e.g. the support ticket.
        #[arg(long)]
        reason: String,
        /// Where to write the JSON document (`-`: standard output).
        #[arg(long, default_value = "-")]
        out: String,
    },
    /// Ban a player: their calls are refused and their streams end, in every service.
    Ban {
        /// The player's user id.
        user_id: String,
        /// Why (told to the player, kept in the audit).
        #[arg(long)]
        reason: String,
        /// For this many hours; for good without it.
        #[arg(long)]
        hours: Option<u64>,
    },
    /// Lift a player's ban.
    Unban {
        /// The player's user id.
        user_id: String,
        /// Why (kept in the audit).
        #[arg(long)]
        reason: String,
    },
    /// Replace an offensive display name.
    Rename {
        /// The player's user id.
        user_id: String,
        /// The new display name.
        display_name: String,
        /// Why (kept in the audit).
        #[arg(long)]
        reason: String,
    },
    /// Delete a player's account on their behalf (as DeleteAccount does).
    Delete {
        /// The player's user id.
        user_id: String,
        /// Why (kept in the audit).
        #[arg(long)]
        reason: String,
    },
}

/// Why a player is reported (`basra report --reason`).
#[derive(Clone, Copy, ValueEnum)]
enum ReportReasonArg {
    /// Their display name is offensive.
    OffensiveName,
    /// They cheat.
    Cheating,
    /// They are abusive in chat.
    ChatAbuse,
    /// Something else (say what in --comment).
    Other,
}

impl ReportReasonArg {
    fn to_pb(self) -> basra_proto::basra::accounts::v1::ReportReason {
        use basra_proto::basra::accounts::v1::ReportReason;
        match self {
            ReportReasonArg::OffensiveName => ReportReason::OffensiveName,
            ReportReasonArg::Cheating => ReportReason::Cheating,
            ReportReasonArg::ChatAbuse => ReportReason::ChatAbuse,
            ReportReasonArg::Other => ReportReason::Other,
        }
    }
}

/// The computer's levels a player chooses from (the service's `BotLevel`).
#[derive(Clone, Copy, ValueEnum)]
enum Level {
    /// Greedy, but one play in two a random card: for a first game.
    Easy,
    /// The card worth the most now.
    Medium,
    /// The search bot: it thinks about the cards it cannot see.
    Hard,
}

impl Level {
    const ALL: [(Level, &str); 3] = [
        (Level::Easy, "easy"),
        (Level::Medium, "medium"),
        (Level::Hard, "hard"),
    ];

    fn to_pb(self) -> BotLevel {
        match self {
            Level::Easy => BotLevel::Easy,
            Level::Medium => BotLevel::Medium,
            Level::Hard => BotLevel::Hard,
        }
    }
}

/// The bot policies, by the level names players see where there is one.
#[derive(Clone, Copy, ValueEnum)]
enum BotPolicy {
    /// A random legal card.
    Random,
    /// The "easy" level: greedy, but one play in two a random card.
    Easy,
    /// The "medium" level: the card worth the most now.
    #[value(alias = "medium")]
    Greedy,
    /// The "hard" level: the search bot (a few milliseconds a play).
    Hard,
}

/// mimalloc, as accounts and game-session run alone: `basra dev` hashes passwords as
/// accounts does (docs/performance.md, "Password hashing").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("Error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // Says the last word at once: nothing pending (a read of the terminal) holds the exit.
    runtime.shutdown_background();
    let _ = std::io::stdout().flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("Error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(ca) = &cli.ca_file {
        basra::tls::trust_ca_file(ca)?;
    }
    match cli.command {
        Command::Rules => rules(),
        Command::Analytics { command } => basra::analytics::run(command).await,
        Command::Simulate(args) => basra::analytics::run_simulate(args).await,
        Command::Admin { json, command } => admin(command, json).await,
        Command::Friends {
            connection,
            command,
        } => {
            let session = sign_in(&connection).await?;
            basra::friends::run(&session, command).await
        }
        Command::Inbox {
            connection,
            command,
        } => {
            let session = sign_in(&connection).await?;
            basra::inbox::run(&session, command).await
        }
        Command::Tournament {
            connection,
            command,
        } => {
            let session = sign_in(&connection).await?;
            basra::tournament::run(&session, command).await
        }
        Command::Name {
            connection,
            new_name,
        } => {
            let session = sign_in(&connection).await?;
            let answer = session
                .accounts()
                .set_display_name(basra_proto::basra::accounts::v1::SetDisplayNameRequest {
                    display_name: new_name,
                })
                .await
                .map_err(|status| anyhow::anyhow!("{}", status.message()))?
                .into_inner();
            println!("{}", basra::render::name_change(&answer));
            Ok(())
        }
        Command::Report {
            connection,
            user_id,
            reason,
            match_id,
            comment,
        } => {
            let session = sign_in(&connection).await?;
            session
                .accounts()
                .report_player(basra_proto::basra::accounts::v1::ReportPlayerRequest {
                    user_id,
                    reason: reason.to_pb() as i32,
                    match_id,
                    comment,
                })
                .await
                .map_err(|status| anyhow::anyhow!("{}", status.message()))?;
            println!("reported: thank you, a moderator will look at it");
            Ok(())
        }
        Command::Profile { connection } => {
            basra::ranked::profile(&sign_in(&connection).await?).await
        }
        Command::Leaderboard {
            connection,
            season,
            rows,
        } => basra::ranked::leaderboard(&sign_in(&connection).await?, &season, rows).await,
        Command::Seasons { connection } => {
            basra::ranked::seasons(&sign_in(&connection).await?).await
        }
        Command::Replay {
            connection,
            match_id,
            delay_ms,
        } => {
            let session = sign_in(&connection).await?;
            basra::replay::run(
                &session,
                &match_id,
                std::time::Duration::from_millis(delay_ms),
            )
            .await
        }
        Command::Account {
            connection,
            command,
        } => {
            use basra_proto::basra::accounts::v1::delete_account_request::Proof;
            let proof = match (&connection.username, &connection.device_id) {
                (Some(_), _) => Proof::Password(password()?),
                (None, Some(id)) => Proof::DeviceId(id.clone()),
                (None, None) => Proof::DeviceId(device_id()?),
            };
            let session = sign_in(&connection).await?;
            match command {
                AccountCommand::Export { out } => {
                    if out == "-" {
                        basra::account::export(&session, &mut std::io::stdout().lock()).await?;
                    } else {
                        let mut file = std::fs::File::create(&out)
                            .with_context(|| format!("cannot create {out}"))?;
                        let written = basra::account::export(&session, &mut file).await?;
                        println!("exported your data: {written} bytes to {out}");
                    }
                }
                AccountCommand::Delete => {
                    let confirmed = basra::account::ask_confirmation(
                        &mut std::io::stdin().lock(),
                        &mut std::io::stdout(),
                    )?;
                    if !confirmed {
                        anyhow::bail!("not confirmed: nothing was deleted");
                    }
                    let kept = basra::account::delete(&session, proof)
                        .await
                        .map_err(|e| anyhow::anyhow!("the account was not deleted: {e}"))?;
                    println!(
                        "deleted account {}; {kept} finished matches stay, your seat named \"Deleted player\"",
                        session.user_id
                    );
                }
            }
            Ok(())
        }
        Command::Dev {
            listen,
            database_url,
            redis_url,
            bot_delay_ms,
            web_listen,
            web_dir,
            tls_cert,
            tls_key,
            token_leeway_seconds,
        } => {
            let tls = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => Some(basra_platform::TlsIdentity {
                    cert_pem: std::fs::read(&cert)
                        .with_context(|| format!("cannot read {}", cert.display()))?,
                    key_pem: std::fs::read(&key)
                        .with_context(|| format!("cannot read {}", key.display()))?,
                }),
                _ => None,
            };
            let scheme = if tls.is_some() { "https" } else { "http" };
            let web_dir = web_dir.unwrap_or_else(basra::web_page::default_dir);
            let web_built = basra::web_page::is_built(&web_dir);
            let _telemetry = basra_platform::telemetry::init(
                "basra-dev",
                &basra_platform::config::TelemetrySettings::default(),
            )?;
            let stores = format!(
                "accounts in {}, rooms and queue in {}",
                database_url.as_deref().map_or("memory", |_| "PostgreSQL"),
                redis_url.as_deref().map_or("memory", |_| "Redis"),
            );
            let options = basra::dev::DevOptions {
                listen,
                database_url,
                redis_url,
                bot_delay: bot_delay_ms.map(Duration::from_millis),
                settings: basra::dev_settings::DevSettings::from_env(
                    std::env::vars_os().filter_map(|(key, value)| {
                        Some((key.into_string().ok()?, value.into_string().ok()?))
                    }),
                )?,
                web: web_built.then(|| basra::web_page::WebOptions {
                    listen: web_listen.unwrap_or_else(|| basra::web_page::default_listen(listen)),
                    dir: web_dir.clone(),
                }),
                tls,
                token_leeway: token_leeway_seconds.map(Duration::from_secs),
            };
            basra::dev::run(options, basra_platform::shutdown::on_signal(), |started| {
                println!(
                    "basra dev: accounts, matchmaking and game-session on {}",
                    started.addr
                );
                println!("stores: {stores}");
                println!(
                    "signing key {} (a development key dies with this process):",
                    started.kid
                );
                println!("{}", started.public_pem.trim_end());
                if scheme == "https" {
                    println!(
                        "play:   basra play --server https://{}:{} --ca-file CA.pem   (a name or address the certificate holds)",
                        basra::dev::client_addr(started.addr).ip(),
                        started.addr.port()
                    );
                } else {
                    println!("play:   {}", basra::dev::play_command(started.addr));
                }
                println!(
                    "a bot:  cargo run -p basra -- bot --server {scheme}://{} computer",
                    basra::dev::client_addr(started.addr)
                );
                match started.web_addr {
                    Some(web) => println!(
                        "web:    open http://{}/ in a browser",
                        basra::dev::client_addr(web)
                    ),
                    None => println!(
                        "web:    not built ({} has no page): run `make web`, then `make run` again",
                        web_dir.display()
                    ),
                }
                println!("{}", basra::dev::cors_line(&started.allowed_origins));
                println!(
                    "admin:  basra admin token --key-file {} --kid {} --operator {}   (then: basra admin rooms --server {scheme}://{} --token TOKEN)",
                    started.key_file.display(),
                    started.kid,
                    basra::dev::operator_name(),
                    basra::dev::client_addr(started.addr)
                );
                println!("stop:   Ctrl-C");
            })
            .await
        }
        Command::Play { connection, seat } => {
            let session = sign_in(&connection).await?;
            println!(
                "signed in as {}",
                basra::render::isolate(&session.display_name)
            );
            if let Some(hint) = basra::inbox::unread_hint(&session).await {
                println!("{hint}");
            }
            let seat = match seat {
                Some(seat) => seat,
                None => menu().await?,
            };
            let seated = match take_seat(&session, &seat).await {
                Ok(seated) => seated,
                Err(err) => match lobby::seated_room(&err) {
                    Some(room_id) => {
                        println!(
                            "you are still seated in room {room_id}, whose match is not finished."
                        );
                        let answer = ask("go back to it? [Y/n] ").await?;
                        if answer.trim().eq_ignore_ascii_case("n") {
                            return Err(err);
                        }
                        println!("{}", basra::render::HELP);
                        play_room(&session, &room_id, Driver::Human).await?;
                        return Ok(());
                    }
                    None => return Err(err),
                },
            };
            if let (Seat::Create { .. }, Some(code)) = (&seat, &seated.join_code) {
                println!("room code: {code}  (friends join with: basra play join {code})");
                println!(
                    "invite a friend: basra friends invite NAME {}",
                    seated.room_id
                );
            }
            println!("{}", basra::render::HELP);
            play_room(&session, &seated.room_id, Driver::Human).await?;
            Ok(())
        }
        Command::Bot {
            connection,
            policy,
            delay_ms,
            matches,
            seat,
        } => {
            let session = sign_in(&connection).await?;
            let seat = seat.unwrap_or(Seat::Quick {
                ranked: false,
                no_bots: false,
                seats: 2,
            });
            let policy = match policy {
                BotPolicy::Random => Policy::Random,
                BotPolicy::Easy => Policy::Easy,
                BotPolicy::Greedy => Policy::Greedy,
                BotPolicy::Hard => Policy::Hard,
            };
            let driver = Driver::Bot {
                policy,
                delay: Duration::from_millis(delay_ms),
            };
            println!(
                "bot signed in as {} on {}",
                basra::render::isolate(&session.display_name),
                connection.server
            );
            let mut played = 0;
            while matches == 0 || played < matches {
                println!("taking a seat ({})…", seat_name(&seat));
                let seated = take_seat(&session, &seat).await?;
                if let (Seat::Create { .. }, Some(code)) = (&seat, &seated.join_code) {
                    println!("room code: {code}");
                }
                println!(
                    "playing in room {} (a play every {delay_ms} ms at most)…",
                    seated.room_id
                );
                let table = play_room(&session, &seated.room_id, driver).await?;
                played += 1;
                println!(
                    "match {played} in room {}: {} – {}",
                    seated.room_id, table.totals[0], table.totals[1]
                );
            }
            Ok(())
        }
    }
}

async fn admin(command: AdminCommand, json: bool) -> anyhow::Result<()> {
    use basra::admin::{Admin, operator_token, parse_status, rooms_table};
    match command {
        AdminCommand::Token {
            key_file,
            kid,
            operator,
            ttl_seconds,
            issuer,
            audience,
        } => {
            let pem = std::fs::read_to_string(&key_file)
                .map_err(|err| anyhow::anyhow!("{}: {err}", key_file.display()))?;
            let ttl = Duration::from_secs(ttl_seconds);
            let token = operator_token(&pem, &kid, &issuer, &audience, &operator, ttl)?;
            println!("{token}");
        }
        AdminCommand::Rooms {
            connection,
            status,
            replica,
            user,
        } => {
            let status = status.as_deref().map(parse_status).transpose()?;
            let admin = Admin::connect(&connection.server, &connection.token).await?;
            print!(
                "{}",
                rooms_table(&admin.rooms(status, &replica, &user).await?)
            );
        }
        AdminCommand::Room {
            connection,
            room_id,
        } => {
            let admin = Admin::connect(&connection.server, &connection.token).await?;
            let room = admin.room(&room_id).await?;
            let text = basra::admin_output::room(&room, json);
            println!("{}", text.trim_end());
        }
        AdminCommand::Close {
            connection,
            room_id,
            reason,
        } => {
            let admin = Admin::connect(&connection.server, &connection.token).await?;
            let closed = admin.close(&room_id, &reason).await?;
            println!(
                "closed {room_id}: match ended {}, closed now {}",
                closed.match_ended, closed.closed_now
            );
        }
        AdminCommand::Player {
            connection,
            command,
        } => {
            let admin =
                basra::admin_player::PlayerAdmin::connect(&connection.server, &connection.token)
                    .await?;
            match command {
                PlayerCommand::Find { query, limit } => {
                    let players = admin.find(&query, limit).await?;
                    if players.is_empty() {
                        println!("no player matches {query:?}");
                    }
                    for p in players {
                        println!(
                            "{} {:?} username {:?} guest {} (by {})",
                            p.user_id, p.display_name, p.username, p.is_guest, p.matched_by
                        );
                    }
                }
                PlayerCommand::Show { user_id, reason } => {
                    let player = admin.show(&user_id, &reason).await?;
                    print!("{}", basra::admin_player::describe(&player));
                }
                PlayerCommand::Export {
                    user_id,
                    reason,
                    out,
                } => {
                    let written = if out == "-" {
                        admin
                            .export(&user_id, &reason, &mut std::io::stdout().lock())
                            .await?
                    } else {
                        let mut file = std::fs::File::create(&out)
                            .with_context(|| format!("cannot create {out}"))?;
                        admin.export(&user_id, &reason, &mut file).await?
                    };
                    if out != "-" {
                        println!("exported {user_id}: {written} bytes to {out}");
                    }
                }
                PlayerCommand::Ban {
                    user_id,
                    reason,
                    hours,
                } => {
                    let banned = admin.ban(&user_id, &reason, hours).await?;
                    println!(
                        "{}",
                        basra::admin_output::ban(
                            &user_id,
                            banned.until.as_ref(),
                            hours.is_none(),
                            json
                        )
                    );
                }
                PlayerCommand::Unban { user_id, reason } => {
                    admin.unban(&user_id, &reason).await?;
                    println!("unbanned {user_id}");
                }
                PlayerCommand::Rename {
                    user_id,
                    display_name,
                    reason,
                } => {
                    let renamed = admin.rename(&user_id, &display_name, &reason).await?;
                    println!("renamed {user_id} to {:?}", renamed.display_name);
                }
                PlayerCommand::Delete { user_id, reason } => {
                    let deleted = admin.delete(&user_id, &reason).await?;
                    println!(
                        "deleted {user_id}; {} recorded matches kept, the seat anonymous",
                        deleted.matches_kept
                    );
                }
            }
        }
        AdminCommand::Report {
            connection,
            command,
        } => {
            use basra::admin_report;
            let admin =
                basra::admin_player::PlayerAdmin::connect(&connection.server, &connection.token)
                    .await?;
            match command {
                ReportCommand::List { limit } => {
                    print!("{}", admin_report::list(&admin.reports(limit).await?));
                }
                ReportCommand::Show { user_id, reason } => {
                    let context = admin.player_reports(&user_id, &reason).await?;
                    print!("{}", admin_report::describe(&user_id, &context));
                }
                ReportCommand::Resolve {
                    user_id,
                    decision,
                    reason,
                    name,
                    hours,
                } => {
                    let answer = admin
                        .resolve(&user_id, decision, &reason, name.as_deref(), hours)
                        .await?;
                    println!("{}", admin_report::resolved(&user_id, decision, &answer));
                }
            }
        }
        AdminCommand::Tournament { command } => {
            use basra::admin_tournament::{
                EventAdmin, definition, event_json, event_row, list_text,
            };
            match command {
                TournamentAdminCommand::Create { connection, args } => {
                    let admin = EventAdmin::connect(&connection.server, &connection.token).await?;
                    let def = definition(&args, chrono::Utc::now())?;
                    let event = admin.create(def, &args.request_id).await?;
                    if json {
                        println!("{}", event_json(&event));
                    } else {
                        println!("created {}", event_row(&event));
                    }
                }
                TournamentAdminCommand::List { connection } => {
                    let admin = EventAdmin::connect(&connection.server, &connection.token).await?;
                    println!("{}", list_text(&admin.list().await?, json))
                }
                TournamentAdminCommand::Cancel {
                    connection,
                    event_id,
                    reason,
                    series,
                } => {
                    let admin = EventAdmin::connect(&connection.server, &connection.token).await?;
                    let cancelled = admin.cancel(&event_id, &reason, series).await?;
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({
                                "event": cancelled.event.as_ref().map(event_json),
                                "notified": cancelled.notified,
                                "series_cancelled": cancelled.series_cancelled.iter().map(event_json).collect::<Vec<_>>(),
                            })
                        );
                    } else {
                        println!(
                            "cancelled {event_id}: {} registered players told",
                            cancelled.notified
                        );
                        for other in &cancelled.series_cancelled {
                            println!("cancelled with its series: {}", event_row(other));
                        }
                    }
                }
            }
        }
        AdminCommand::Drain {
            connection,
            deadline_seconds,
        } => {
            let admin = Admin::connect(&connection.server, &connection.token).await?;
            let drained = admin
                .drain("", Duration::from_secs(deadline_seconds))
                .await?;
            println!("{}", basra::admin_output::drain(&drained, json));
        }
        AdminCommand::Undrain { connection } => {
            let admin = Admin::connect(&connection.server, &connection.token).await?;
            let undrained = admin.undrain("").await?;
            println!("{}", basra::admin_output::undrain(&undrained, json));
        }
    }
    Ok(())
}

/// How a seat is taken, in a few words.
fn seat_name(seat: &Seat) -> &'static str {
    match seat {
        Seat::Computer { .. } => "a match against the computer",
        Seat::Quick { .. } => "the quick-match queue",
        Seat::Create { .. } => "a new private room",
        Seat::Join { .. } => "a private room by its code",
        Seat::Lobby => "a public room",
    }
}

/// The password of `--username`'s account.
fn password() -> anyhow::Result<String> {
    std::env::var("BASRA_PASSWORD")
        .map_err(|_| anyhow::anyhow!("--username needs the password in BASRA_PASSWORD"))
}

async fn sign_in(connection: &Connection) -> anyhow::Result<Session> {
    if let Some(username) = &connection.username {
        return Session::login(&connection.server, username, &password()?).await;
    }
    let device = match &connection.device_id {
        Some(id) => id.clone(),
        None => device_id()?,
    };
    Session::guest(&connection.server, &device, &connection.name).await
}

async fn take_seat(session: &Session, seat: &Seat) -> anyhow::Result<Seated> {
    match seat {
        Seat::Computer { level } => {
            lobby::create_room(
                session,
                RoomVisibility::Private,
                vec![1],
                level.to_pb(),
                RuleSettings::default(),
            )
            .await
        }
        Seat::Quick {
            ranked,
            no_bots,
            seats,
        } => lobby::quick_match(session, *ranked, !no_bots, *seats).await,
        Seat::Create { target } => {
            let settings = RuleSettings {
                target_score: *target,
                ..RuleSettings::default()
            };
            lobby::create_room(
                session,
                RoomVisibility::Private,
                Vec::new(),
                BotLevel::Unspecified,
                settings,
            )
            .await
        }
        // A room id works too: the room one is seated in has no code when the queue made it.
        Seat::Join { code } => match uuid::Uuid::parse_str(code) {
            Ok(_) => lobby::join(session, Target::RoomId(code.clone())).await,
            Err(_) => lobby::join(session, Target::JoinCode(code.clone())).await,
        },
        Seat::Lobby => {
            let rooms = lobby::public_rooms(session).await?;
            if rooms.is_empty() {
                anyhow::bail!("no public room is open; try `basra play quick`");
            }
            for (i, room) in rooms.iter().enumerate() {
                let target = room
                    .settings
                    .as_ref()
                    .and_then(|s| s.target_score)
                    .unwrap_or(101);
                println!(
                    "{}. {} seats, to {target}, {} seated",
                    i + 1,
                    room.seats.len(),
                    room.seats.iter().filter(|s| s.occupant != 1).count()
                );
            }
            let pick = ask("join which room? ").await?;
            let room = pick
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| rooms.get(i))
                .ok_or_else(|| anyhow::anyhow!("{pick:?} is not a room number"))?;
            lobby::join(session, Target::RoomId(room.room_id.clone())).await
        }
    }
}

async fn menu() -> anyhow::Result<Seat> {
    println!(
        "1. play the computer\n2. quick match\n3. create a private room\n4. join by code\n5. public rooms"
    );
    loop {
        let choice = ask("> ").await?;
        return Ok(match choice.trim() {
            "1" => Seat::Computer {
                level: ask_level().await?,
            },
            "2" => Seat::Quick {
                ranked: false,
                no_bots: false,
                seats: 2,
            },
            "3" => Seat::Create { target: None },
            "4" => Seat::Join {
                code: ask("code: ").await?.trim().to_uppercase(),
            },
            "5" => Seat::Lobby,
            _ => continue,
        });
    }
}

/// Asks for the computer's level by number or name; Enter takes medium.
async fn ask_level() -> anyhow::Result<Level> {
    let names: Vec<String> = Level::ALL
        .iter()
        .enumerate()
        .map(|(i, (_, name))| format!("{}. {name}", i + 1))
        .collect();
    loop {
        let answer = ask(&format!("level ({}) [medium]: ", names.join(", "))).await?;
        let answer = answer.trim().to_lowercase();
        if answer.is_empty() {
            return Ok(Level::Medium);
        }
        let chosen = Level::ALL
            .iter()
            .enumerate()
            .find(|(i, (_, name))| answer == (i + 1).to_string() || answer == *name);
        if let Some((_, (level, _))) = chosen {
            return Ok(*level);
        }
    }
}

fn rules() -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        writeln!(stdout, "{}", basra_rules::answer(&line?))?;
        stdout.flush()?;
    }
    Ok(())
}
