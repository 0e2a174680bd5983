// The seasons' pure parts (src/seasons.ts): the season picker's options (the current season
// first, asked with no season id, then the finished ones newest first), the leaderboard's
// heading (live, or a finished season's kept board with its end), the caller's own row
// added below the page, the profile's tier and best season finish, and only the last
// season picked drawn when answers arrive out of order.
import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { boardHeading, boardRows, boardView, LastPick, seasonChoices, standing } from "../../src/seasons";
import {
  LeaderboardEntrySchema,
  LeaderboardResponseSchema,
  ListSeasonsResponseSchema,
  ProfileSchema,
  SeasonFinishSchema,
  SeasonSchema,
} from "../../src/gen/basra/accounts/v1/accounts_pb";

const ENDED = Date.UTC(2027, 0, 1);

const season = (id: string, name: string, current: boolean, endsAt?: number) =>
  create(SeasonSchema, { id, name, current, endsAt: endsAt === undefined ? undefined : timestampFromMs(endsAt) });

const entry = (rank: number, userId: string, rating = 1500) => create(LeaderboardEntrySchema, { rank, userId, displayName: userId, rating });

test("the picker lists the current season first (asked with no id), then the finished ones", () => {
  const answer = create(ListSeasonsResponseSchema, {
    seasons: [season("s3", "Spring", true), season("s2", "", false, ENDED), season("s1", "Autumn", false)],
    next: season("s4", "Summer", false),
  });
  assert.deepEqual(seasonChoices(answer), [
    { value: "", id: "s3", name: "Spring", current: true },
    { value: "s2", id: "s2", name: "s2", current: false },
    { value: "s1", id: "s1", name: "Autumn", current: false },
  ]);
  // The next season has not started: it is not a choice; no seasons, no choices.
  assert.deepEqual(seasonChoices(create(ListSeasonsResponseSchema, { next: season("s1", "A", false) })), []);
});

test("the heading says whether the board is live or a finished season's, kept since its end", () => {
  assert.deepEqual(boardHeading(create(LeaderboardResponseSchema, {})), { key: "leaderboard" });
  assert.deepEqual(boardHeading(create(LeaderboardResponseSchema, { season: season("s3", "Spring", true) })), {
    key: "boardCurrent",
    name: "Spring",
  });
  assert.deepEqual(boardHeading(create(LeaderboardResponseSchema, { season: season("s1", "", false, ENDED) })), {
    key: "boardFinal",
    name: "s1",
    endedMs: ENDED,
  });
  assert.deepEqual(boardHeading(create(LeaderboardResponseSchema, { season: season("s1", "Autumn", false) })), {
    key: "boardFinal",
    name: "Autumn",
    endedMs: null,
  });
});

test("the caller's row is marked on the page, and added after a gap when not on it", () => {
  const onPage = create(LeaderboardResponseSchema, { entries: [entry(1, "a"), entry(2, "me")], caller: entry(2, "me") });
  assert.deepEqual(
    boardRows(onPage, "me").map((r) => [r.entry.rank, r.mine, r.gap]),
    [
      [1, false, false],
      [2, true, false],
    ],
  );
  const below = create(LeaderboardResponseSchema, { entries: [entry(1, "a"), entry(2, "b")], caller: entry(40, "me") });
  assert.deepEqual(
    boardRows(below, "me").map((r) => [r.entry.rank, r.mine, r.gap]),
    [
      [1, false, false],
      [2, false, false],
      [40, true, true],
    ],
  );
  assert.equal(boardRows(create(LeaderboardResponseSchema, { entries: [entry(1, "a")] }), "me").length, 1, "not listed: no row of mine");
  assert.equal(boardRows(create(LeaderboardResponseSchema, {}), undefined).length, 0);
});

test("an empty board says so beside its list, not as a numbered row", () => {
  // No row: no list item (it read "1. Nobody is ranked yet"), the words apart.
  assert.deepEqual(boardView(create(LeaderboardResponseSchema, {}), "me"), { rows: [], empty: "leaderboardEmpty" });
  const current = create(LeaderboardResponseSchema, { season: season("s2", "Spring", true) });
  assert.deepEqual(boardView(current, "me"), { rows: [], empty: "leaderboardEmpty" });
  const finished = create(LeaderboardResponseSchema, { season: season("s1", "Winter", false, 0) });
  assert.deepEqual(boardView(finished, undefined), { rows: [], empty: "leaderboardEmptySeason" });
  // Only the caller (not on the page's rows): their row, numbered by their rank.
  const mine = boardView(create(LeaderboardResponseSchema, { caller: entry(7, "me") }), "me");
  assert.equal(mine.empty, null);
  assert.deepEqual(
    mine.rows.map((r) => [r.entry.rank, r.mine]),
    [[7, true]],
  );
  const some = boardView(create(LeaderboardResponseSchema, { entries: [entry(1, "a")] }), "me");
  assert.deepEqual([some.empty, some.rows.length], [null, 1]);
});

test("the profile's standing: its tier and best season finish, rounded", () => {
  const profile = create(ProfileSchema, {
    rating: 1612.4,
    tier: "Gold",
    bestSeasonFinish: create(SeasonFinishSchema, { seasonId: "s1", seasonName: "Autumn", rank: 3, rating: 1722.6, tier: "Platinum" }),
  });
  assert.deepEqual(standing(profile), { tier: "Gold", best: { rank: 3, season: "Autumn", rating: 1723, tier: "Platinum" } });
  profile.bestSeasonFinish!.seasonName = "";
  assert.equal(standing(profile).best?.season, "s1", "a season without a name is its id");
  assert.deepEqual(standing(create(ProfileSchema, {})), { tier: "", best: null });
});

test("only the last season picked is drawn, whatever order the answers come in", () => {
  const picks = new LastPick();
  const first = picks.take();
  assert.ok(picks.current(first));
  const second = picks.take();
  assert.ok(!picks.current(first), "the older pick's answer, arriving late, is dropped");
  assert.ok(picks.current(second));
});
