// The seasons' pure parts (no DOM, no words): the ranked tab's season picker (ListSeasons:
// the current season, then the finished ones, newest first), what a leaderboard's heading
// says (the current season live, a finished one's kept board), the rows with the caller's
// own appended when it is not among them (an empty board's words apart from the list),
// the profile's tier and best season finish, and
// which of several leaderboard answers may still be drawn (the last season picked). The
// panels (leaderboard.ts, account.ts) draw them; tests/unit/seasons.test.ts checks them.

import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { LeaderboardEntry, LeaderboardResponse, ListSeasonsResponse, Profile } from "./gen/basra/accounts/v1/accounts_pb";

/** One option of the season picker. */
export interface SeasonChoice {
  /** What Leaderboard is asked with (LeaderboardRequest.seasonId): "" for the current season. */
  value: string;
  /** The season's id. */
  id: string;
  /** Its name (the id when it has none). */
  name: string;
  /** Whether it is running (its leaderboard is live); else finished (its board kept). */
  current: boolean;
}

/**
 * The picker's options: the current season first (asked for with no season id, so the
 * live board), then every finished season, newest first (ListSeasons' order). Empty when
 * the server sets no seasons or none has started: then there is nothing to pick.
 */
export function seasonChoices(answer: ListSeasonsResponse): SeasonChoice[] {
  const choices = answer.seasons.map((s) => ({ value: s.current ? "" : s.id, id: s.id, name: s.name || s.id, current: s.current }));
  return [...choices.filter((c) => c.current), ...choices.filter((c) => !c.current)];
}

/** What a leaderboard's heading says, as an i18n key and its values. */
export type BoardHeading =
  | { key: "leaderboard" }
  | { key: "boardCurrent"; name: string }
  | { key: "boardFinal"; name: string; endedMs: number | null };

/** The heading of `answer`: the season it lists, live or final (kept at its end). */
export function boardHeading(answer: LeaderboardResponse): BoardHeading {
  const season = answer.season;
  if (!season) return { key: "leaderboard" };
  const name = season.name || season.id;
  if (season.current) return { key: "boardCurrent", name };
  return { key: "boardFinal", name, endedMs: season.endsAt ? timestampMs(season.endsAt) : null };
}

/** A row of the board as drawn. */
export interface BoardRow {
  entry: LeaderboardEntry;
  /** The caller's own row. */
  mine: boolean;
  /** Rows were left out before this one (the caller's, far below the page). */
  gap: boolean;
}

/**
 * What the board shows: its rows (an ordered list, numbered by rank), or, with no row at
 * all, the words that say it is empty — beside the list, never as its item (a list item
 * is numbered: the empty board read "1. Nobody is ranked yet").
 */
export type BoardView = { rows: BoardRow[]; empty: null } | { rows: []; empty: "leaderboardEmpty" | "leaderboardEmptySeason" };

/** The view of `answer` for the reader `me`. */
export function boardView(answer: LeaderboardResponse, me: string | undefined): BoardView {
  const rows = boardRows(answer, me);
  if (rows.length) return { rows, empty: null };
  const finished = answer.season !== undefined && !answer.season.current;
  return { rows: [], empty: finished ? "leaderboardEmptySeason" : "leaderboardEmpty" };
}

/** The page's rows, and the caller's own row after them when it is not on the page. */
export function boardRows(answer: LeaderboardResponse, me: string | undefined): BoardRow[] {
  const rows = answer.entries.map((entry) => ({ entry, mine: entry.userId === me, gap: false }));
  const caller = answer.caller;
  if (caller && !answer.entries.some((e) => e.userId === caller.userId)) rows.push({ entry: caller, mine: true, gap: true });
  return rows;
}

/** The profile's season standing: its tier ("" when the server names none), its best finish. */
export interface Standing {
  tier: string;
  best: { rank: number; season: string; rating: number; tier: string } | null;
}

/** The tier of the profile's rating and its best finish on a finished season's board. */
export function standing(profile: Profile): Standing {
  const best = profile.bestSeasonFinish;
  return {
    tier: profile.tier,
    best: best
      ? { rank: best.rank, season: best.seasonName || best.seasonId, rating: Math.round(best.rating), tier: best.tier }
      : null,
  };
}

/**
 * Which answer may still be drawn when the reader picks seasons faster than the server
 * answers: each request takes a ticket, and only the last ticket's answer is drawn (an
 * older season's board arriving late would show under the newer pick).
 */
export class LastPick {
  private last = 0;

  /** A ticket for a new request. */
  take(): number {
    this.last += 1;
    return this.last;
  }

  /** Whether the answer to `ticket` is still the one to draw. */
  current(ticket: number): boolean {
    return ticket === this.last;
  }
}
