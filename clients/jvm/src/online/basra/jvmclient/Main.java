package online.basra.jvmclient;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import online.basra.accounts.v1.AccountsServiceGrpc;
import online.basra.accounts.v1.MatchHistoryRequest;
import online.basra.accounts.v1.MatchSummary;
import online.basra.common.v1.BotLevel;
import online.basra.common.v1.RoomVisibility;
import online.basra.game.v1.GameServiceGrpc;
import online.basra.game.v1.Join;
import online.basra.game.v1.Leave;
import online.basra.game.v1.PlayRequest;
import online.basra.game.v1.PlayResponse;
import online.basra.matchmaking.v1.CreateRoomRequest;
import online.basra.matchmaking.v1.CreateRoomResponse;
import online.basra.matchmaking.v1.MatchmakingServiceGrpc;

/**
 * A client as an Android app is built: grpc-java with Netty and protobuf-lite, the code
 * generated from proto/ (make sdk). Against a server (host:port) it signs in as a guest, keeps
 * its access token fresh, plays a whole match against the computer on the Play stream, drops its
 * connection in the middle and resumes with last_seen_seq (nothing missed, nothing repeated),
 * and reads its match history. It exits 0 when all of that held, 1 naming what did not.
 *
 * <pre>java -cp CLASSPATH online.basra.jvmclient.Main 127.0.0.1:50051 [--drop-after N]
 *     [--offline-ms MS]</pre>
 *
 * <p>It drops the connection after its Nth play (default 3) for MS milliseconds (default 1000).
 * The match must outlive the first access token: against a server whose tokens live minutes,
 * give it a short lifetime (BASRA_ACCOUNTS_TOKENS__ACCESS_TTL_SECONDS=2) and a slow computer
 * (--bot-delay-ms 40), as the test does.
 */
public final class Main {
  private static final long START = System.nanoTime();

  /** One thing the Play stream delivered: an event, or its end (status null: OK). */
  private static final class Delivery {
    final PlayResponse event;
    final Status end;

    Delivery(PlayResponse event, Status end) {
      this.event = event;
      this.end = end;
    }
  }

  /** One Play stream, its deliveries queued for the main thread. */
  private static final class Stream {
    final BlockingQueue<Delivery> deliveries = new LinkedBlockingQueue<>();
    ClientCallStreamObserver<PlayRequest> requests;

    Stream(GameServiceGrpc.GameServiceStub game) {
      game.play(
          new ClientResponseObserver<PlayRequest, PlayResponse>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<PlayRequest> call) {
              requests = call;
            }

            @Override
            public void onNext(PlayResponse event) {
              deliveries.add(new Delivery(event, null));
            }

            @Override
            public void onError(Throwable t) {
              deliveries.add(new Delivery(null, Status.fromThrowable(t)));
            }

            @Override
            public void onCompleted() {
              deliveries.add(new Delivery(null, Status.OK));
            }
          });
    }

    void send(PlayRequest request) {
      requests.onNext(request);
    }

    Delivery next() throws InterruptedException {
      Delivery delivery = deliveries.poll(30, TimeUnit.SECONDS);
      Table.check(delivery != null, "no event for 30 s");
      return delivery;
    }
  }

  static void say(String format, Object... args) {
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - START);
    System.out.printf("[%5d ms] %s%n", ms, String.format(format, args));
    System.out.flush();
  }

  static ManagedChannel connect(String target) {
    return NettyChannelBuilder.forTarget(target)
        .usePlaintext()
        // Within what the server accepts (docs/clients.md, "Keepalive").
        .keepAliveTime(30, TimeUnit.SECONDS)
        .keepAliveTimeout(10, TimeUnit.SECONDS)
        .build();
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: Main HOST:PORT [--drop-after N] [--offline-ms MS]");
      System.exit(2);
    }
    String target = args[0];
    int dropAfter = 3;
    int offlineMs = 1000;
    for (int i = 1; i + 1 < args.length; i += 2) {
      if (args[i].equals("--drop-after")) {
        dropAfter = Integer.parseInt(args[i + 1]);
      } else if (args[i].equals("--offline-ms")) {
        offlineMs = Integer.parseInt(args[i + 1]);
      }
    }
    try {
      run(target, dropAfter, offlineMs);
    } catch (Exception | AssertionError e) {
      say("FAILED: %s", e);
      System.exit(1);
    }
    System.exit(0);
  }

  private static void run(String target, int dropAfter, int offlineMs) throws Exception {
    ManagedChannel channel = connect(target);
    Session session = new Session(channel, "jvm-" + UUID.randomUUID(), "JVM client");
    String me = session.tokens().getUserId();
    Instant firstExpiry = Session.expiry(session.tokens());
    say("signed in as guest %s; access token valid until %s", me, firstExpiry);

    CreateRoomResponse room =
        session.call(
            MatchmakingServiceGrpc.newBlockingStub(channel).withInterceptors(session),
            stub ->
                stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                    .createRoom(
                        CreateRoomRequest.newBuilder()
                            .setRequestId(UUID.randomUUID().toString())
                            .setVisibility(RoomVisibility.ROOM_VISIBILITY_PRIVATE)
                            .addBotSeats(1)
                            .setBotLevel(BotLevel.BOT_LEVEL_EASY)
                            .build()));
    say("room %s (code %s), seat %d", room.getRoomId(), room.getJoinCode(), room.getSeat());

    long matchStart = System.nanoTime();
    Table table = new Table();
    Stream stream = open(channel, session, room.getRoomId(), null);
    boolean dropped = false;
    boolean resumed = false;
    boolean retriedAuth = false;
    int replayed = 0;
    Long resumedFrom = null;
    while (true) {
      Delivery delivery = stream.next();
      if (delivery.end != null) {
        if (delivery.end.isOk()) {
          break;
        }
        if (delivery.end.getCode() == Status.Code.UNAUTHENTICATED && !retriedAuth) {
          // The stream's token was refused: refresh once, then resume where it broke.
          retriedAuth = true;
          session.refresh("Play answered UNAUTHENTICATED");
          stream = open(channel, session, room.getRoomId(), table.lastSeq());
          continue;
        }
        throw new IllegalStateException("the Play stream ended with " + delivery.end);
      }
      if (resumedFrom != null && replayed == 0) {
        Table.check(
            delivery.event.getEventCase() != PlayResponse.EventCase.SNAPSHOT,
            "the resume from seq %d was answered with a snapshot: events were not kept",
            resumedFrom);
      }
      if (resumedFrom != null) {
        replayed++;
      }
      final Stream current = stream;
      table.apply(delivery.event, current::send);
      if (table.ended() != null) {
        stream.send(PlayRequest.newBuilder().setLeave(Leave.getDefaultInstance()).build());
        continue;
      }
      if (!dropped && table.myPlays() == dropAfter && !table.movePending()) {
        // The phone changes network: the connection is gone, events go on without us.
        dropped = true;
        long at = table.lastSeq();
        stream.requests.cancel("the network changed", null);
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        say("dropped the connection after %d plays, at seq %d", table.myPlays(), at);
        Thread.sleep(offlineMs);
        channel = connect(target);
        session.use(channel);
        // And a token the server no longer takes (as after a key rotation): the resumed
        // stream answers UNAUTHENTICATED, the client refreshes once and resumes again.
        session.spoilAccessToken();
        stream = open(channel, session, room.getRoomId(), at);
        resumedFrom = at;
        resumed = true;
        say("resumed with last_seen_seq %d", at);
      }
    }
    Table.check(resumed, "the match ended before the drop (after %d plays)", dropAfter);
    Table.check(retriedAuth, "the spoilt token was not refused");
    long matchMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - matchStart);
    Table.check(
        Instant.now().isAfter(firstExpiry) && session.scheduledRefreshes() > 0,
        "the match (%d ms) did not outlive the first access token (until %s) with a refresh ahead"
            + " of its expiry (%d)",
        matchMs,
        firstExpiry,
        session.scheduledRefreshes());
    Table.check(table.ended() != null, "the stream ended without match_ended");
    say(
        "match %s ended (%s): totals %s, %d events, %d plays of mine, %d replayed after the"
            + " resume, %d snapshot",
        table.matchId(),
        table.ended().getReason(),
        table.ended().getTotalsList(),
        table.events(),
        table.myPlays(),
        replayed,
        table.snapshots());
    Table.check(table.snapshots() == 1, "%d snapshots: only the first join sends one", table.snapshots());

    MatchSummary found = history(channel, session, table.matchId());
    say("history: match %s, %d seats, recorded", found.getMatchId(), found.getSeatsCount());
    say(
        "ok: signed in, a whole match of %d ms outliving the first access token, %d refreshes"
            + " (%d ahead of expiry), resumed from seq %d, history read",
        matchMs,
        session.refreshes(),
        session.scheduledRefreshes(),
        resumedFrom);
    session.close();
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private static Stream open(ManagedChannel channel, Session session, String room, Long lastSeen) {
    Stream stream = new Stream(GameServiceGrpc.newStub(channel).withInterceptors(session));
    Join.Builder join = Join.newBuilder().setRoomId(room);
    if (lastSeen != null) {
      join.setLastSeenSeq(lastSeen);
    }
    stream.send(PlayRequest.newBuilder().setJoin(join).build());
    return stream;
  }

  /** The match in the caller's history (recorded a moment after it ends). */
  private static MatchSummary history(ManagedChannel channel, Session session, String matchId)
      throws InterruptedException {
    AccountsServiceGrpc.AccountsServiceBlockingStub accounts =
        AccountsServiceGrpc.newBlockingStub(channel).withInterceptors(session);
    for (int attempt = 0; attempt < 100; attempt++) {
      for (MatchSummary match :
          session
              .call(
                  accounts,
                  stub ->
                      stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                          .matchHistory(MatchHistoryRequest.newBuilder().setPageSize(5).build()))
              .getMatchesList()) {
        if (match.getMatchId().equals(matchId)) {
          return match;
        }
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("match " + matchId + " is not in the history after 10 s");
  }
}
