package dev.tether.test;

import dev.tether.Heartbeat;
import dev.tether.loop.Deadline;
import dev.tether.loop.WorkContext;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link WorkContext} for unit-testing a handler, tool or inner loop without a mailbox or a loop,
 * with the levers a test needs: it counts beats, and a test can lose the lease, request shutdown or
 * pass the deadline, at once or at a chosen beat.
 *
 * <pre>{@code
 * WorkFixture work =
 *     WorkFixture.builder().message("job-7", 2).deadline(Duration.ofMinutes(5)).build();
 * work.atBeat(3, work::loseLease);
 *
 * assertThatThrownBy(() -> handler.handle(request, work.context()))
 *     .isInstanceOf(WorkStoppedException.class);
 * assertThat(work.beats()).isEqualTo(3);
 * }</pre>
 *
 * <p>Time is a {@link SettableTicker}: the deadline passes only when the test {@linkplain
 * #advance advances} it, and the heartbeat's {@linkplain Heartbeat#elapsed() elapsed time} moves
 * only then. The context behaves as the one a {@code MainLoop} gives a handler, except that nothing
 * extends a lease: {@link WorkContext#isLeaseLost()} becomes true only through {@link
 * #loseLease()}, and {@link WorkContext#isShutdownRequested()} only through {@link
 * #requestShutdown()}.
 *
 * <p>Thread-safe: the context may be handed to threads the handler starts, and the test may pull
 * the levers from any thread. Actions given to {@link #atBeat} run on the thread that makes that
 * beat, inside {@link Heartbeat#beat()}; one that throws is logged by the heartbeat and does not
 * reach the handler.
 */
public final class WorkFixture {
  /** The message id of a fixture built without {@link Builder#message}. */
  public static final String DEFAULT_MESSAGE_ID = "test-message-1";

  private final SettableTicker ticker;
  private final Heartbeat heartbeat;
  private final WorkContext context;
  private final AtomicLong beats = new AtomicLong();
  private final AtomicBoolean leaseLost = new AtomicBoolean();
  private final AtomicBoolean shutdownRequested = new AtomicBoolean();
  private final CopyOnWriteArrayList<BeatAction> actions = new CopyOnWriteArrayList<>();

  private WorkFixture(Builder b) {
    this.ticker = b.ticker;
    this.heartbeat = new Heartbeat(ticker);
    heartbeat.addCallback(this::onBeat);
    WorkContext.Builder context =
        WorkContext.builder(heartbeat)
            .message(b.messageId, b.deliveryCount)
            .leaseLost(leaseLost::get)
            .shutdownRequested(shutdownRequested::get);
    if (b.deadline != null) {
      context.deadline(Deadline.after(b.deadline, ticker));
    }
    this.context = context.build();
  }

  /**
   * Returns a fixture for delivery 1 of message {@value #DEFAULT_MESSAGE_ID}, with no deadline, on
   * a new {@link SettableTicker}.
   *
   * @return the fixture
   */
  public static WorkFixture create() {
    return builder().build();
  }

  /**
   * Returns a builder, preset as {@link #create()}.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Returns the context to pass to the code under test. The same context every time.
   *
   * @return the context
   */
  public WorkContext context() {
    return context;
  }

  /**
   * Returns the ticker the heartbeat and the deadline read.
   *
   * @return the ticker
   */
  public SettableTicker ticker() {
    return ticker;
  }

  /**
   * Returns the context's heartbeat, for code that takes one (a nested loop, a {@code
   * LeaseExtender} under test).
   *
   * @return the heartbeat
   */
  public Heartbeat heartbeat() {
    return heartbeat;
  }

  /**
   * Returns how many times the context's heartbeat was beaten, by any thread, since the fixture was
   * built.
   *
   * @return the number of beats
   */
  public long beats() {
    return beats.get();
  }

  /**
   * Moves time forward: the deadline comes closer (and passes once the total advance reaches it),
   * and the time since the last beat grows.
   *
   * @param amount how far; zero or more
   * @return this fixture
   * @throws NullPointerException if {@code amount} is null
   * @throws IllegalArgumentException if {@code amount} is negative
   */
  public WorkFixture advance(Duration amount) {
    ticker.advance(amount);
    return this;
  }

  /**
   * Marks the lease as lost, as when an extension finds that another delivery owns the message:
   * from now on {@link WorkContext#isLeaseLost()} and {@link WorkContext#shouldStop()} are true.
   * Idempotent.
   */
  public void loseLease() {
    leaseLost.set(true);
  }

  /**
   * Marks shutdown as requested, as when the loop is stopping: from now on {@link
   * WorkContext#isShutdownRequested()} and {@link WorkContext#shouldStop()} are true. Idempotent.
   */
  public void requestShutdown() {
    shutdownRequested.set(true);
  }

  /**
   * Runs {@code action} once, on the thread that makes beat number {@code beat} (the first beat is
   * 1), after that beat is counted and before {@code beat()} returns. Typical actions are {@link
   * #loseLease()}, {@link #requestShutdown()}, or advancing past the deadline, to see the code
   * under test stop at its next check.
   *
   * @param beat the beat to act on, after the beats already made
   * @param action what to do
   * @return this fixture
   * @throws NullPointerException if {@code action} is null
   * @throws IllegalArgumentException if that beat has already been made
   */
  public WorkFixture atBeat(long beat, Runnable action) {
    Objects.requireNonNull(action, "action");
    if (beat <= beats.get()) {
      throw alreadyMade(beat);
    }
    BeatAction pending = new BeatAction(beat, action);
    actions.add(pending);
    // The beat may have come between the check and the add, unseen by onBeat: then the action is
    // still listed (had onBeat seen it, it would have removed and run it).
    if (beat <= beats.get() && actions.remove(pending)) {
      throw alreadyMade(beat);
    }
    return this;
  }

  private IllegalArgumentException alreadyMade(long beat) {
    return new IllegalArgumentException(
        "beat " + beat + " has already been made (" + beats.get() + " beats so far)");
  }

  private void onBeat() {
    long n = beats.incrementAndGet();
    for (BeatAction a : actions) {
      if (a.beat == n && actions.remove(a)) {
        a.action.run();
      }
    }
  }

  @Override
  public String toString() {
    return "WorkFixture[beats=" + beats.get() + ", " + context + "]";
  }

  private static final class BeatAction {
    final long beat;
    final Runnable action;

    BeatAction(long beat, Runnable action) {
      this.beat = beat;
      this.action = action;
    }
  }

  /** Builds a {@link WorkFixture}. Not thread-safe; build once, then use the fixture. */
  public static final class Builder {
    private String messageId = DEFAULT_MESSAGE_ID;
    private int deliveryCount = 1;
    private Duration deadline;
    private SettableTicker ticker = new SettableTicker();

    private Builder() {}

    /**
     * Sets the message the work is on, for code that reads its id or acts on a redelivery.
     *
     * @param id the message id
     * @param deliveryCount its delivery count, 1 for the first delivery
     * @return this builder
     * @throws NullPointerException if {@code id} is null
     * @throws IllegalArgumentException if {@code deliveryCount} is less than 1
     */
    public Builder message(String id, int deliveryCount) {
      Objects.requireNonNull(id, "id");
      if (deliveryCount < 1) {
        throw new IllegalArgumentException("deliveryCount must be >= 1, was " + deliveryCount);
      }
      this.messageId = id;
      this.deliveryCount = deliveryCount;
      return this;
    }

    /**
     * Gives the work a deadline {@code budget} after the fixture is built, on its ticker.
     *
     * @param budget the time allowed; zero or more (zero: already passed)
     * @return this builder
     * @throws NullPointerException if {@code budget} is null
     * @throws IllegalArgumentException if {@code budget} is negative
     */
    public Builder deadline(Duration budget) {
      Objects.requireNonNull(budget, "budget");
      if (budget.isNegative()) {
        throw new IllegalArgumentException("deadline budget must be >= 0, was " + budget);
      }
      this.deadline = budget;
      return this;
    }

    /**
     * Uses {@code ticker} instead of a new one, to share time with other objects under test.
     *
     * @param ticker the ticker
     * @return this builder
     * @throws NullPointerException if {@code ticker} is null
     */
    public Builder ticker(SettableTicker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Builds the fixture; its heartbeat counts as beaten now, with no beat counted yet.
     *
     * @return the fixture
     */
    public WorkFixture build() {
      return new WorkFixture(this);
    }
  }
}
