// The inbox's unread count as the page follows it on the feed (src/feed.ts, countNotice):
// the snapshot sets it, a notice newer than the snapshot's newest adds one, a replayed
// note (its notice counted in the snapshot already) and other events add nothing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { countNotice } from "../../src/feed";
import { FriendsSnapshotSchema, NoticeSchema, WatchFriendsResponseSchema } from "../../src/gen/basra/accounts/v1/accounts_pb";

const snapshot = (unreadNotices: number, newestNoticeId: bigint) =>
  create(WatchFriendsResponseSchema, {
    event: { case: "snapshot", value: create(FriendsSnapshotSchema, { unreadNotices, newestNoticeId }) },
  });
const notice = (seq: bigint, id: bigint) =>
  create(WatchFriendsResponseSchema, { seq, noticeId: id, event: { case: "notice", value: create(NoticeSchema, { id }) } });

test("the snapshot sets the count and only newer notices add to it", () => {
  let count = { unread: 0, newestId: 0n };
  count = countNotice(count, snapshot(2, 7n));
  assert.deepEqual(count, { unread: 2, newestId: 7n });
  count = countNotice(count, notice(4n, 6n));
  assert.deepEqual(count, { unread: 2, newestId: 7n }, "a replayed note is counted already");
  count = countNotice(count, notice(5n, 7n));
  assert.deepEqual(count, { unread: 2, newestId: 7n });
  count = countNotice(count, notice(6n, 9n));
  assert.deepEqual(count, { unread: 3, newestId: 9n }, "a new notice is one more");
  const presence = create(WatchFriendsResponseSchema, { event: { case: "presenceChanged", value: {} } });
  assert.deepEqual(countNotice(count, presence), count);
});
