//! `basra admin tournament create|list|cancel`: events for operators, over matchmaking's
//! `EventAdminService`, calling with an operator token (`basra admin token`).

use std::time::Duration;

use anyhow::Context as _;
use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::matchmaking::v1::event_admin_service_client::EventAdminServiceClient;
use basra_proto::basra::matchmaking::v1::{
    self as pb, CancelEventRequest, CancelEventResponse, CreateEventRequest, EventFormat,
    ListAllEventsRequest,
};
use serde_json::{Value, json};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::admin::OperatorToken;
use crate::admin_output::iso;
use crate::tournament::{format_word, status_word};

/// What `basra admin tournament create` takes (flags).
#[derive(clap::Args, Debug, Clone)]
pub struct CreateArgs {
    /// Shown to players (1..80 characters).
    #[arg(long)]
    pub name: String,
    /// knockout, swiss or arena.
    #[arg(long, default_value = "knockout")]
    pub format: String,
    /// The start, RFC 3339 (`2026-12-24T20:00:00+02:00`); or use --in or --cron.
    #[arg(long, conflicts_with_all = ["starts_in", "cron"])]
    pub start_at: Option<String>,
    /// The start, this many seconds from now.
    #[arg(long = "in", value_name = "SECONDS", conflicts_with = "cron")]
    pub starts_in: Option<u64>,
    /// A recurring series: five CRON fields (`0 20 * * *`: every day at 20:00).
    #[arg(long, requires = "time_zone")]
    pub cron: Option<String>,
    /// The series' IANA time zone (`Africa/Cairo`).
    #[arg(long)]
    pub time_zone: Option<String>,
    /// Registration opens this many seconds before the start (default: a day).
    #[arg(long, default_value_t = 86_400)]
    pub registration_opens_before: u32,
    /// The most players (2..4096), first come.
    #[arg(long, default_value_t = 64)]
    pub cap: u32,
    /// The lowest rating admitted.
    #[arg(long, requires = "max_rating")]
    pub min_rating: Option<i32>,
    /// The highest rating admitted.
    #[arg(long, requires = "min_rating")]
    pub max_rating: Option<i32>,
    /// The check-in window before the start, in seconds (0: none, everyone registered
    /// plays).
    #[arg(long, default_value_t = 0)]
    pub check_in: u32,
    /// Seconds a player has to join a ready match (10..3600) before forfeiting it.
    #[arg(long, default_value_t = 60)]
    pub join_deadline: u32,
    /// Points to win each match.
    #[arg(long)]
    pub target: Option<u32>,
    /// The matches count toward ratings.
    #[arg(long)]
    pub rated: bool,
    /// Spectators may watch the matches.
    #[arg(long)]
    pub spectators: bool,
    /// Swiss: the number of rounds.
    #[arg(long, default_value_t = 0)]
    pub rounds: u32,
    /// Arena: how long it runs, in minutes.
    #[arg(long, default_value_t = 0)]
    pub arena_minutes: u32,
    /// Makes a retry create nothing new (1..64 of A-Z a-z 0-9 - _).
    #[arg(long, default_value = "")]
    pub request_id: String,
}

/// A format by name.
pub fn parse_format(name: &str) -> anyhow::Result<EventFormat> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "knockout" | "ko" => EventFormat::Knockout,
        "swiss" => EventFormat::Swiss,
        "arena" => EventFormat::Arena,
        other => anyhow::bail!("unknown format {other:?}: knockout, swiss, arena"),
    })
}

/// The definition `args` describe, at `now` (for `--in`). The server checks the ranges;
/// this checks only what it must read.
pub fn definition(
    args: &CreateArgs,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<pb::EventDefinition> {
    let start_at = match (&args.start_at, args.starts_in) {
        (Some(at), _) => Some(
            chrono::DateTime::parse_from_rfc3339(at)
                .with_context(|| format!("--start-at {at:?} is not RFC 3339"))?
                .with_timezone(&chrono::Utc),
        ),
        (None, Some(seconds)) => Some(now + chrono::Duration::seconds(seconds as i64)),
        (None, None) => None,
    };
    anyhow::ensure!(
        start_at.is_some() || args.cron.is_some(),
        "say when: --start-at, --in SECONDS or --cron with --time-zone"
    );
    Ok(pb::EventDefinition {
        name: args.name.clone(),
        format: parse_format(&args.format)? as i32,
        start_at: start_at.map(|at| prost_types::Timestamp {
            seconds: at.timestamp(),
            nanos: 0,
        }),
        recurrence: args.cron.as_ref().map(|cron| pb::Recurrence {
            cron: cron.clone(),
            time_zone: args.time_zone.clone().unwrap_or_default(),
        }),
        registration_opens_seconds_before: args.registration_opens_before,
        cap: args.cap,
        rating_band: match (args.min_rating, args.max_rating) {
            (Some(min), Some(max)) => Some(pb::RatingBand { min, max }),
            _ => None,
        },
        check_in_seconds: args.check_in,
        join_deadline_seconds: args.join_deadline,
        settings: Some(RuleSettings {
            seats: Some(2),
            target_score: args.target,
            ..RuleSettings::default()
        }),
        rated: args.rated,
        allow_spectators: args.spectators,
        swiss_rounds: args.rounds,
        arena_seconds: args.arena_minutes.saturating_mul(60),
    })
}

/// An EventAdmin client of matchmaking at `server`, calling with an operator token.
pub struct EventAdmin {
    client: EventAdminServiceClient<InterceptedService<Channel, OperatorToken>>,
}

impl EventAdmin {
    /// Connects to matchmaking at `server`.
    pub async fn connect(server: &str, token: &str) -> anyhow::Result<EventAdmin> {
        let channel = crate::tls::endpoint(server)?
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .with_context(|| format!("cannot reach {server}"))?;
        let token = format!("Bearer {token}")
            .parse()
            .context("the token is not valid ASCII")?;
        Ok(EventAdmin {
            client: EventAdminServiceClient::with_interceptor(channel, OperatorToken::new(token)),
        })
    }

    /// Creates the event `definition` describes.
    pub async fn create(
        &self,
        definition: pb::EventDefinition,
        request_id: &str,
    ) -> anyhow::Result<pb::Event> {
        self.client
            .clone()
            .create_event(CreateEventRequest {
                definition: Some(definition),
                request_id: request_id.to_owned(),
            })
            .await?
            .into_inner()
            .event
            .context("CreateEvent answered no event")
    }

    /// Every event, newest start first (every page).
    pub async fn list(&self) -> anyhow::Result<Vec<pb::Event>> {
        let mut events = Vec::new();
        let mut page_token = String::new();
        loop {
            let page = self
                .client
                .clone()
                .list_all_events(ListAllEventsRequest {
                    page_size: 100,
                    page_token,
                })
                .await?
                .into_inner();
            events.extend(page.events);
            if page.next_page_token.is_empty() {
                return Ok(events);
            }
            page_token = page.next_page_token;
        }
    }

    /// Cancels `event_id` for `reason` (`series`: its recurring series too, with every
    /// occurrence made that has not started).
    pub async fn cancel(
        &self,
        event_id: &str,
        reason: &str,
        series: bool,
    ) -> anyhow::Result<CancelEventResponse> {
        Ok(self
            .client
            .clone()
            .cancel_event(CancelEventRequest {
                event_id: event_id.to_owned(),
                reason: reason.to_owned(),
                series,
            })
            .await?
            .into_inner())
    }
}

/// An event as JSON (`--json`).
pub fn event_json(event: &pb::Event) -> Value {
    let def = event.definition.clone().unwrap_or_default();
    json!({
        "event_id": event.event_id,
        "series_id": event.series_id,
        "name": def.name,
        "format": format_word(def.format()).to_lowercase(),
        "status": status_word(event.status()),
        "starts_at": iso(event.starts_at.as_ref()),
        "registration_opens_at": iso(event.registration_opens_at.as_ref()),
        "check_in_opens_at": iso(event.check_in_opens_at.as_ref()),
        "ends_at": iso(event.ends_at.as_ref()),
        "registered": event.registered,
        "cap": def.cap,
        "rated": def.rated,
        "current_round": event.current_round,
        "rounds_total": event.rounds_total,
        "recurrence": def.recurrence.as_ref().map(|r| json!({"cron": r.cron, "time_zone": r.time_zone})),
        "cancel_reason": event.cancel_reason,
        "champion": event.champion,
    })
}

/// One event for a person: id, name, format, status, start, players.
pub fn event_row(event: &pb::Event) -> String {
    let def = event.definition.clone().unwrap_or_default();
    let series = def
        .recurrence
        .as_ref()
        .map(|r| format!("  every {:?} {}", r.cron, r.time_zone))
        .unwrap_or_default();
    format!(
        "{}  {:?}  {}  {}  starts {}  {}/{} players{series}",
        event.event_id,
        def.name,
        format_word(def.format()),
        status_word(event.status()),
        iso(event.starts_at.as_ref()).unwrap_or_default(),
        event.registered,
        def.cap,
    )
}

/// `basra admin tournament list`'s answer.
pub fn list_text(events: &[pb::Event], json: bool) -> String {
    if json {
        return Value::Array(events.iter().map(event_json).collect()).to_string();
    }
    if events.is_empty() {
        return "no event".into();
    }
    events.iter().map(event_row).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: CreateArgs,
    }

    fn args(line: &[&str]) -> CreateArgs {
        Cli::try_parse_from(std::iter::once("create").chain(line.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn flags_make_the_definition() {
        let now = chrono::DateTime::from_timestamp(1_000_000, 0).unwrap();
        let def = definition(
            &args(&[
                "--name",
                "Cup",
                "--format",
                "swiss",
                "--in",
                "90",
                "--cap",
                "16",
                "--rounds",
                "4",
                "--check-in",
                "60",
                "--target",
                "31",
                "--rated",
                "--min-rating",
                "1000",
                "--max-rating",
                "1800",
            ]),
            now,
        )
        .unwrap();
        assert_eq!(def.format(), EventFormat::Swiss);
        assert_eq!(def.start_at.unwrap().seconds, 1_000_090);
        assert_eq!(
            (def.cap, def.swiss_rounds, def.check_in_seconds),
            (16, 4, 60)
        );
        assert_eq!(def.settings.unwrap().target_score, Some(31));
        assert_eq!(
            def.rating_band,
            Some(pb::RatingBand {
                min: 1000,
                max: 1800
            })
        );
        assert!(def.rated && !def.allow_spectators);
        let def = definition(
            &args(&[
                "--name",
                "Daily",
                "--cron",
                "0 20 * * *",
                "--time-zone",
                "Africa/Cairo",
            ]),
            now,
        )
        .unwrap();
        assert!(def.start_at.is_none());
        assert_eq!(def.recurrence.unwrap().time_zone, "Africa/Cairo");
        let at = definition(
            &args(&["--name", "X", "--start-at", "2026-12-24T20:00:00+02:00"]),
            now,
        )
        .unwrap();
        assert_eq!(at.start_at.unwrap().seconds, 1_798_135_200);
        assert!(definition(&args(&["--name", "X"]), now).is_err());
        assert!(definition(&args(&["--name", "X", "--in", "5", "--format", "cup"]), now).is_err());
    }

    #[test]
    fn the_list_prints_for_people_and_scripts() {
        let event = pb::Event {
            event_id: "e1".into(),
            definition: Some(pb::EventDefinition {
                name: "Cup".into(),
                format: EventFormat::Knockout as i32,
                cap: 8,
                ..Default::default()
            }),
            status: pb::EventStatus::Registration as i32,
            starts_at: Some(prost_types::Timestamp {
                seconds: 1_798_135_200,
                nanos: 0,
            }),
            registered: 3,
            ..Default::default()
        };
        assert_eq!(
            list_text(std::slice::from_ref(&event), false),
            "e1  \"Cup\"  knockout  registration open  starts 2026-12-24T18:00:00Z  3/8 players"
        );
        let json: Value = serde_json::from_str(&list_text(&[event], true)).unwrap();
        assert_eq!(json[0]["status"], "registration open");
        assert_eq!(json[0]["format"], "knockout");
        assert_eq!(list_text(&[], false), "no event");
    }
}
