//! `basra replay MATCH_ID`: a finished match of yours, move by move as a spectator saw it
//! (GetReplay), with the analysis of your plays beside them; or someone else's event match
//! or match that allowed spectators, without analysis. Enter steps one event, `p` plays or
//! pauses (one event every `--delay-ms`), `q` quits. The events go through the same
//! [`Table`] and announcements as a live match.

use std::collections::HashMap;
use std::time::Duration;

use basra_proto::basra::accounts::v1::{self as pb, AnalysisState, PlayQuality};
use basra_proto::basra::game::v1::PlayResponse;
use basra_proto::convert::card_from_pb;

use crate::session::Session;
use crate::table::Table;
use crate::{input, render};

/// How long `basra replay` waits for an analysis being computed.
const ANALYSIS_WAIT: Duration = Duration::from_secs(30);

/// A replay being watched: the events, where the watcher is, the verdicts by seq.
#[derive(Debug, Default)]
pub struct Replay {
    events: Vec<PlayResponse>,
    next: usize,
    verdicts: HashMap<u64, pb::PlayVerdict>,
}

impl Replay {
    /// The replay of `answer`.
    pub fn new(answer: pb::GetReplayResponse) -> Replay {
        let verdicts = answer
            .analysis
            .map(|a| a.plays.into_iter().map(|v| (v.seq, v)).collect())
            .unwrap_or_default();
        Replay {
            events: answer.events,
            next: 0,
            verdicts,
        }
    }

    /// The next event, if any is left.
    pub fn step(&mut self) -> Option<&PlayResponse> {
        let event = self.events.get(self.next)?;
        self.next += 1;
        Some(event)
    }

    /// Whether every event was shown.
    pub fn done(&self) -> bool {
        self.next >= self.events.len()
    }

    /// The analysis line for the event at `seq`: the mark of your play there, if any.
    pub fn mark(&self, seq: u64) -> Option<String> {
        let verdict = self.verdicts.get(&seq)?;
        Some(mark_line(verdict))
    }
}

/// A verdict as one line: the mark, the points lost and the better card.
pub fn mark_line(verdict: &pb::PlayVerdict) -> String {
    let card = |c: &Option<basra_proto::basra::common::v1::Card>| {
        c.as_ref()
            .and_then(|c| card_from_pb(c).ok())
            .map_or_else(|| "?".to_owned(), |c| c.to_string())
    };
    let quality = PlayQuality::try_from(verdict.quality).unwrap_or(PlayQuality::Unspecified);
    let (sign, word) = match quality {
        PlayQuality::Blunder => ("??", "blunder"),
        PlayQuality::Mistake => ("?", "mistake"),
        PlayQuality::Inaccuracy => ("?!", "inaccuracy"),
        PlayQuality::Good | PlayQuality::Unspecified => return "   ✓ a good play".to_owned(),
    };
    format!(
        "   {sign} {word}: about {:.1} points lost; the search bot plays {}",
        verdict.expected_loss,
        card(&verdict.best)
    )
}

/// Fetches the replay (waiting for its analysis while it is computed), then shows it.
pub async fn run(session: &Session, match_id: &str, delay: Duration) -> anyhow::Result<()> {
    let answer = fetch(session, match_id).await?;
    if let Some(note) = note(&answer) {
        println!("{note}");
    }
    let mut replay = Replay::new(answer);
    let mut table = Table::default();
    println!("Enter: next event · p: play / pause · q: quit");
    let mut playing = false;
    while !replay.done() {
        let line = if playing {
            tokio::select! {
                line = input::next_line() => line,
                () = tokio::time::sleep(delay) => Some(String::new()),
            }
        } else {
            input::next_line().await
        };
        let Some(line) = line else { break };
        match line.trim() {
            "q" | "quit" => return Ok(()),
            "p" | "play" | "pause" => {
                playing = !playing;
                println!("{}", if playing { "▶ playing" } else { "⏸ paused" });
                continue;
            }
            _ => {}
        }
        if let Some(event) = replay.step().cloned() {
            table
                .apply(&event)
                .map_err(|e| anyhow::anyhow!("the replay has a bad event: {e}"))?;
            render::announce(&table, &event);
            if let Some(mark) = replay.mark(event.seq) {
                println!("{mark}");
            }
        }
    }
    println!("— the end —");
    Ok(())
}

/// What is said before the replay when it comes without (ready) marks.
pub fn note(answer: &pb::GetReplayResponse) -> Option<&'static str> {
    if answer.spectator {
        return Some(
            "(you did not play in this match: it is shown as its spectators saw it, without analysis)",
        );
    }
    let pending = answer
        .analysis
        .as_ref()
        .is_none_or(|a| a.state != AnalysisState::Ready as i32);
    pending.then_some("(the analysis is not ready yet: your plays are shown without marks)")
}

/// GetReplay with the analysis, asked again while it is pending (up to [`ANALYSIS_WAIT`]).
async fn fetch(session: &Session, match_id: &str) -> anyhow::Result<pb::GetReplayResponse> {
    let started = tokio::time::Instant::now();
    loop {
        let answer = session
            .with_refresh(|| async {
                session
                    .accounts()
                    .get_replay(pb::GetReplayRequest {
                        match_id: match_id.to_owned(),
                        with_analysis: true,
                    })
                    .await
            })
            .await
            .map_err(|status| anyhow::anyhow!("{}", status.message()))?
            .into_inner();
        let ready = answer
            .analysis
            .as_ref()
            .is_some_and(|a| a.state == AnalysisState::Ready as i32);
        // A spectator gets no analysis to wait for.
        if ready || answer.spectator || started.elapsed() > ANALYSIS_WAIT {
            return Ok(answer);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use basra_proto::convert::card_to_pb;

    #[test]
    fn the_replay_steps_through_its_events_and_marks_your_plays() {
        let event = |seq| PlayResponse {
            seq,
            ..Default::default()
        };
        let card = |text: &str| Some(card_to_pb(text.parse().unwrap()));
        let answer = pb::GetReplayResponse {
            events: vec![event(1), event(2)],
            analysis: Some(pb::MatchAnalysis {
                state: AnalysisState::Ready as i32,
                plays: vec![pb::PlayVerdict {
                    seq: 2,
                    played: card("4S"),
                    best: card("7D"),
                    expected_loss: 9.25,
                    quality: PlayQuality::Blunder as i32,
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut replay = Replay::new(answer);
        assert_eq!(replay.step().map(|e| e.seq), Some(1));
        assert_eq!(replay.mark(1), None);
        assert_eq!(replay.step().map(|e| e.seq), Some(2));
        let mark = replay.mark(2).unwrap();
        assert!(
            mark.contains("blunder") && mark.contains("9.2") && mark.contains("7D"),
            "{mark}"
        );
        assert!(replay.done());
        assert!(replay.step().is_none());
    }

    #[test]
    fn a_replay_says_why_it_has_no_marks() {
        let ready = pb::GetReplayResponse {
            analysis: Some(pb::MatchAnalysis {
                state: AnalysisState::Ready as i32,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(note(&ready), None);
        let pending = pb::GetReplayResponse {
            analysis: Some(pb::MatchAnalysis {
                state: AnalysisState::Pending as i32,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(note(&pending).unwrap().contains("not ready yet"));
        let watched = pb::GetReplayResponse {
            spectator: true,
            ..Default::default()
        };
        assert!(
            note(&watched)
                .unwrap()
                .contains("did not play in this match")
        );
    }
}
