package online.basra.jvmclient;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import online.basra.common.v1.Card;
import online.basra.common.v1.GameView;
import online.basra.game.v1.MatchEnded;
import online.basra.game.v1.PlayCard;
import online.basra.game.v1.PlayRequest;
import online.basra.game.v1.PlayResponse;
import online.basra.game.v1.RejectCode;

/**
 * One seat's game state, built from the events of the Play stream alone (no I/O here), and the
 * checks a client makes on them: every logged event's {@code seq} is the previous one plus 1,
 * and the events that are not logged (snapshot, rejected, pong) repeat the last one. It says
 * which card to play when the turn is the seat's: any card in the hand is legal in Basra, so
 * the first one, with the canonical capture.
 */
final class Table {
  /** What a client sends next, if anything. */
  interface Outbox {
    void send(PlayRequest request);
  }

  private Long lastSeq;
  private Integer mySeat;
  private final List<Card> hand = new ArrayList<>();
  private Integer turn;
  private String pendingMove;
  private MatchEnded ended;
  private String matchId;
  private int events;
  private int myPlays;
  private int snapshots;

  Long lastSeq() {
    return lastSeq;
  }

  int events() {
    return events;
  }

  int myPlays() {
    return myPlays;
  }

  int snapshots() {
    return snapshots;
  }

  String matchId() {
    return matchId;
  }

  MatchEnded ended() {
    return ended;
  }

  Integer mySeat() {
    return mySeat;
  }

  /** Whether a move of this seat is sent and not yet answered. */
  boolean movePending() {
    return pendingMove != null;
  }

  /** Takes one event; sends the seat's play through {@code out} when it is its turn. */
  void apply(PlayResponse event, Outbox out) {
    events++;
    PlayResponse.EventCase kind = event.getEventCase();
    boolean logged =
        kind != PlayResponse.EventCase.SNAPSHOT
            && kind != PlayResponse.EventCase.REJECTED
            && kind != PlayResponse.EventCase.PONG;
    long seq = event.getSeq();
    if (lastSeq != null) {
      long want = logged ? lastSeq + 1 : lastSeq;
      check(seq == want, "event %s has seq %d, expected %d", kind, seq, want);
    }
    lastSeq = seq;
    switch (kind) {
      case SNAPSHOT:
        snapshots++;
        GameView view = event.getSnapshot().getView();
        mySeat = view.hasYourSeat() ? view.getYourSeat() : null;
        hand.clear();
        hand.addAll(view.getHandList());
        turn = view.hasTurn() ? view.getTurn() : null;
        matchId = view.getMatchId();
        break;
      case MATCH_STARTED:
        matchId = event.getMatchStarted().getMatchId();
        break;
      case HAND_DEALT:
        hand.addAll(event.getHandDealt().getCardsList());
        break;
      case TURN_STARTED:
        turn = event.getTurnStarted().getSeat();
        break;
      case CARD_PLAYED:
        turn = null;
        if (mySeat != null && event.getCardPlayed().getSeat() == mySeat) {
          Card card = event.getCardPlayed().getCard();
          check(hand.remove(card), "played %s, which is not in the hand %s", card, hand);
          myPlays++;
          pendingMove = null;
        }
        break;
      case MATCH_ENDED:
        ended = event.getMatchEnded();
        turn = null;
        break;
      case REJECTED:
        check(
            event.getRejected().getCode() == RejectCode.REJECT_CODE_STALE,
            "a play was refused: %s %s",
            event.getRejected().getCode(),
            event.getRejected().getMessage());
        pendingMove = null; // chosen on a table that changed: choose again below
        break;
      default:
        break;
    }
    if (ended == null && pendingMove == null && mySeat != null && turn != null
        && turn.intValue() == mySeat && !hand.isEmpty()) {
      pendingMove = UUID.randomUUID().toString();
      out.send(
          PlayRequest.newBuilder()
              .setPlayCard(
                  PlayCard.newBuilder()
                      .setCard(hand.get(0))
                      .setBasedOnSeq(lastSeq)
                      .setClientMoveId(pendingMove))
              .build());
    }
  }

  static void check(boolean ok, String format, Object... args) {
    if (!ok) {
      throw new IllegalStateException(String.format(format, args));
    }
  }
}
