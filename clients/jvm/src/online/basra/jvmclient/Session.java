package online.basra.jvmclient;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import online.basra.accounts.v1.AccountsServiceGrpc;
import online.basra.accounts.v1.AuthTokens;
import online.basra.accounts.v1.GuestLoginRequest;
import online.basra.accounts.v1.RefreshRequest;

/**
 * The signed-in player: the tokens, the {@code authorization} header on every call, and the
 * refresh an app does before the access token expires (a third of its lifetime ahead, at most a
 * minute) and once more when a call answers UNAUTHENTICATED (docs/clients.md, "Tokens").
 */
final class Session implements ClientInterceptor {
  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private volatile Channel channel;
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread thread = new Thread(r, "token-refresh");
            thread.setDaemon(true);
            return thread;
          });
  private AuthTokens tokens;
  private ScheduledFuture<?> nextRefresh;
  private int refreshes;
  private int scheduledRefreshes;
  private Duration lifetime = Duration.ZERO;

  /** Signs in as the guest of {@code deviceId} through {@code channel}. */
  Session(Channel channel, String deviceId, String displayName) {
    this.channel = channel;
    AuthTokens signedIn =
        AccountsServiceGrpc.newBlockingStub(channel)
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .guestLogin(
                GuestLoginRequest.newBuilder()
                    .setDeviceId(deviceId)
                    .setDisplayName(displayName)
                    .build())
            .getTokens();
    install(signedIn);
  }

  /**
   * Calls through {@code channel} from now on (the app reconnected), first refreshing the tokens
   * if a refresh fell due while it was offline.
   */
  void use(Channel channel) {
    this.channel = channel;
    if (Instant.now().plus(refreshAhead(tokens())).isAfter(expiry(tokens()))) {
      refresh("due while offline");
    }
  }

  /**
   * Replaces the access token with one the server refuses, as after a rotation of its signing
   * key: the next call answers UNAUTHENTICATED, and the client must recover by itself.
   */
  synchronized void spoilAccessToken() {
    tokens = tokens.toBuilder().setAccessToken("no-longer-valid").build();
  }

  synchronized AuthTokens tokens() {
    return tokens;
  }

  synchronized int refreshes() {
    return refreshes;
  }

  /** Refreshes that ran on their schedule, ahead of the access token's expiry. */
  synchronized int scheduledRefreshes() {
    return scheduledRefreshes;
  }

  /**
   * Exchanges the refresh token for new tokens now (the old refresh token is then spent); {@code
   * why} is for the log.
   */
  synchronized void refresh(String why) {
    AuthTokens fresh =
        AccountsServiceGrpc.newBlockingStub(channel)
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .refresh(RefreshRequest.newBuilder().setRefreshToken(tokens.getRefreshToken()).build())
            .getTokens();
    refreshes++;
    install(fresh);
    Main.say("refreshed (%s): access token valid until %s", why, expiry(fresh));
  }

  /** Runs {@code call} on {@code stub}; on UNAUTHENTICATED refreshes once and runs it again. */
  <S, R> R call(S stub, Function<S, R> call) {
    try {
      return call.apply(stub);
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() != Status.Code.UNAUTHENTICATED) {
        throw e;
      }
            refresh("a call answered UNAUTHENTICATED");
      return call.apply(stub);
    }
  }

  void close() {
    timer.shutdownNow();
  }

  static Instant expiry(AuthTokens tokens) {
    return Instant.ofEpochSecond(
        tokens.getAccessTokenExpiresAt().getSeconds(), tokens.getAccessTokenExpiresAt().getNanos());
  }

  /** How long before the access token's expiry to refresh: a third of its life, at most 1 min. */
  private Duration refreshAhead(AuthTokens tokens) {
    Duration ahead = lifetime.dividedBy(3);
    return ahead.compareTo(Duration.ofMinutes(1)) > 0 ? Duration.ofMinutes(1) : ahead;
  }

  private void install(AuthTokens fresh) {
    tokens = fresh;
    if (nextRefresh != null) {
      nextRefresh.cancel(false);
    }
    lifetime = Duration.between(Instant.now(), expiry(fresh));
    long delay = Math.max(0, lifetime.minus(refreshAhead(fresh)).toMillis());
    nextRefresh =
        timer.schedule(
            () -> {
              try {
                synchronized (this) {
                  refresh("ahead of expiry");
                  scheduledRefreshes++;
                }
              } catch (RuntimeException e) {
                // Offline: use() refreshes on reconnecting, and a call's UNAUTHENTICATED too.
                Main.say("refresh failed (%s); again on reconnecting", e.getMessage());
              }
            },
            delay,
            TimeUnit.MILLISECONDS);
  }

  @Override
  public <Q, A> ClientCall<Q, A> interceptCall(
      MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
    return new ForwardingClientCall.SimpleForwardingClientCall<Q, A>(next.newCall(method, options)) {
      @Override
      public void start(Listener<A> listener, Metadata headers) {
        headers.put(AUTHORIZATION, "Bearer " + tokens().getAccessToken());
        super.start(listener, headers);
      }
    };
  }
}
