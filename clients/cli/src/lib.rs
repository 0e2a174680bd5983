//! `basra`: the terminal client and tools of Basra online.
//!
//! - [`account`]: `basra account export|delete`, the player's own account.
//! - [`admin`]: the operator's tool over `GameAdminService`, and operator tokens.
//! - [`admin_player`], [`admin_report`]: `basra admin player …` and `basra admin report …`,
//!   moderation over accounts' `AccountsAdminService`.
//! - [`admin_tournament`]: `basra admin tournament create|list|cancel` (events, for operators).
//! - [`admin_output`]: what `basra admin` prints (ISO 8601 times, tables, `--json`).
//! - [`analytics`]: `basra analytics export` and `basra simulate` (the `basra-analytics` crate).
//! - [`dev`]: the whole backend in one process (`basra dev`).
//! - [`friends`]: `basra friends …` (requests, friends, blocks).
//! - [`inbox`]: `basra inbox …` (the notices kept while away, marked read; the unread count).
//! - [`input`]: the player's typed lines, one reader for the whole process.
//! - [`ranked`]: `basra profile`, `basra leaderboard [--season ID]`, `basra seasons`: the
//!   rating with its tier and best season finish, a season's leaderboard, the seasons.
//! - [`session`]: sign-in and the connection to the one client endpoint.
//! - [`lobby`]: getting a seat (queue, computer, private code, public lobby).
//! - [`player`]: playing a room over the `Play` stream, for a person or a bot, resuming
//!   after a dropped connection.
//! - [`simulate`]: `basra simulate`, through the real services (bots as guests) or fast
//!   (engine-made records in `RecordMatches` batches).
//! - [`tournament`]: `basra tournament list|join|watch|standings|withdraw` (events).
//! - [`table`]: the client's model of its game, rebuilt from the events.
//! - [`web_page`]: the web client's page, served by `basra dev`.
//! - [`tls`]: `http://` and `https://` servers, the `--ca-file` trusted.
//! - [`render`]: the terminal picture and announcements; [`replay`]: `basra replay`, a
//!   finished match move by move with the analysis of your plays.

pub mod account;
pub mod admin;
pub mod admin_output;
pub mod admin_player;
pub mod admin_report;
pub mod admin_tournament;
pub mod analytics;
pub mod dev;
pub mod dev_settings;
pub mod friends;
pub mod inbox;
pub mod input;
pub mod lobby;
pub mod player;
pub mod ranked;
pub mod render;
pub mod replay;
pub mod session;
pub mod simulate;
pub mod table;
pub mod tls;
pub mod tournament;
pub mod web_page;
