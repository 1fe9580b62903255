package dev.tether.loop;

import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.Ticker;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.MailboxException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.NackOutcome;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives messages from a {@link Mailbox} and runs a {@link Handler} on each, keeping each
 * message's lease alive for as long as the handler proves progress by beating.
 *
 * <h2>One iteration</h2>
 *
 * <ol>
 *   <li>receive up to {@link MainLoopConfig#maxMessages()} messages with the configured visibility
 *       timeout and long-poll wait, then beat (an idle loop is a live loop);
 *   <li>for each message: attach a {@link LeaseExtender} to the loop's heartbeat, run the handler
 *       with a {@link WorkContext} (heartbeat, deadline, delivery and attempt, checkpoints,
 *       lease-lost, cancelled and shutdown signals), detach; then
 *       <ul>
 *         <li>on success, reply (if the message has a reply-to) and acknowledge as one step;
 *         <li>on failure, end the attempt (charged): nack with the policy's backoff, or
 *             dead-letter when the {@link DeadLetterPolicy} says so or the message's budget is
 *             spent (its requester then gets an error reply);
 *         <li>on {@link WorkStoppedException} for a lost lease or a cancellation, leave the message
 *             to its new owner (or to nobody); for shutdown, hand it back at once, not charged;
 *         <li>on a failure that is, or was caused by, a {@link
 *             dev.tether.mailbox.MailboxConnectionException} while the loop's own mailbox reports
 *             its store unavailable ({@link Mailbox#isAvailable()}: a checkpoint during a database
 *             restart or failover), hand it back, not charged, with its latest checkpoint: the
 *             store failed, not the work (while fewer than 20 of the message's deliveries went
 *             uncharged, and when the hand-back itself works; else it is charged as any failure);
 *       </ul>
 *       and beat.
 * </ol>
 *
 * A result whose acknowledgement is refused because the lease was lost is discarded with a
 * warning: another delivery owns the message (at-least-once execution, exactly-once completion).
 *
 * <h2>Drain and shutdown</h2>
 *
 * {@link #drain()} and {@link #shutdown()} may be called from any thread. Both stop receiving: a
 * loop blocked in a long-poll receive is woken (its thread is interrupted only while inside {@code
 * receive}), and messages received but not started are handed back at once ({@link
 * Message#handBack()}, not charged). A drain lets the running handler go on as before: its beats
 * keep extending its lease, and it completes or fails as usual. A shutdown (which may follow a
 * drain) asks the running handler to stop: it sees {@link WorkContext#isShutdownRequested()} and
 * {@link WorkContext#shouldStop()}, is not interrupted, and is allowed to finish; when it gives up
 * with {@link WorkStoppedException} ({@link WorkStoppedException.Reason#SHUTDOWN}) or an {@link
 * InterruptedException}, its message is handed back, not charged, with its latest checkpoint. A
 * {@link LoopGroup} drains its loops first and shuts them down when its drain timeout ends. When
 * the loop stops it calls {@link Mailbox#flushAcknowledgements()}, so that a mailbox deferring
 * its acknowledgements makes them durable before the loop's thread is released.
 *
 * <h2>Deadline</h2>
 *
 * With {@link MainLoopConfig#deadline()} set, a handler's context reports the deadline; once it
 * passes, beats no longer extend the lease and the handler's thread is interrupted (once), so a
 * handler that ignores the deadline is stopped at its next blocking call or interrupt check; the
 * attempt then ends as a failure. The interrupt comes from one shared daemon thread, {@code
 * tether-deadline}, started the first time any loop with a deadline handles a message.
 *
 * <h2>Nested loops</h2>
 *
 * {@link #execute(Object, WorkContext)} runs this loop's handler on a request without a message,
 * beating the caller's heartbeat, so that an outer loop (an evaluation loop, say) whose message
 * is being processed gets its lease extended by the inner work's beats.
 *
 * <p>Thread-safe: {@code run} executes on one thread at a time; everything else may be called from
 * any thread.
 *
 * @param <T> the request type
 * @param <R> the result type
 */
public final class MainLoop<T, R> implements WorkLoop {
  private static final Logger log = LoggerFactory.getLogger(MainLoop.class);

  /** How long to wait before receiving again after the mailbox failed once; doubles per failure. */
  static final Duration RECEIVE_FAILURE_BACKOFF = Duration.ofSeconds(1);

  /** The longest wait between two receives while the mailbox keeps failing. */
  static final Duration MAX_RECEIVE_FAILURE_BACKOFF = Duration.ofSeconds(30);

  private final String name;
  private final Mailbox<T, R> requests;
  private final Handler<T, R> handler;
  private final MainLoopConfig config;
  private final Ticker ticker;
  private final Heartbeat heartbeat;
  private final LeaseExtender extender;
  private final Listener listener;
  private final DeadlineTimer deadlineTimer; // null: the shared one, started on first use

  private final Object phaseLock = new Object();
  private Thread runner; // guarded by phaseLock
  private boolean inReceive; // guarded by phaseLock
  private boolean started; // guarded by phaseLock
  private volatile boolean running;
  private volatile boolean draining; // no more receives; set by drain() and by shutdown()
  private volatile boolean shutdownRequested; // the running handler should stop too
  private volatile int receiveFailures; // consecutive; written only by the running thread

  private MainLoop(Builder<T, R> b) {
    this.name = b.name;
    this.requests = b.requests;
    this.handler = b.handler;
    this.config = b.config;
    this.ticker = b.ticker;
    this.heartbeat = b.heartbeat != null ? b.heartbeat : new Heartbeat(b.ticker);
    this.listener = b.listener;
    this.deadlineTimer = b.deadlineTimer;
    this.extender = new LeaseExtender(config.leaseExtender(), b.extenderListener);
  }

  /**
   * Returns a builder.
   *
   * @param name the loop's name (thread, logs, health)
   * @param requests the mailbox to receive from
   * @param handler the work to run on each message
   * @param <T> the request type
   * @param <R> the result type
   * @return a new builder
   */
  public static <T, R> Builder<T, R> builder(
      String name, Mailbox<T, R> requests, Handler<T, R> handler) {
    return new Builder<>(name, requests, handler);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Heartbeat heartbeat() {
    return heartbeat;
  }

  @Override
  public Optional<MainLoopConfig> config() {
    return Optional.of(config);
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  /**
   * Returns false while the mailbox is failing: from the first failed receive until a receive
   * works again (the loop keeps retrying with a backoff doubling from 1 s to 30 s, and keeps
   * beating, since it is not stuck), and while the mailbox reports its store {@linkplain
   * Mailbox#isAvailable() unavailable} (any store call failed, not only a receive: a short
   * database outage is seen even when the next receive only waits for a connection).
   *
   * @return whether the last receive worked and the mailbox's store is available
   */
  @Override
  public boolean isReady() {
    return receiveFailures == 0 && requests.isAvailable();
  }

  /**
   * Returns whether {@link #shutdown()} was called.
   *
   * @return true once shutdown was requested
   */
  public boolean isShutdownRequested() {
    return shutdownRequested;
  }

  /**
   * Returns whether the loop stopped receiving: {@link #drain()} or {@link #shutdown()} was called.
   *
   * @return true once draining or shut down
   */
  public boolean isDraining() {
    return draining;
  }

  @Override
  public void run() {
    run(Long.MAX_VALUE);
  }

  /**
   * Runs at most {@code maxIterations} receive iterations (or until shut down), on the calling
   * thread.
   *
   * @param maxIterations the most receives to make; at least 1
   * @throws IllegalStateException if the loop already ran or is running
   * @throws IllegalArgumentException if {@code maxIterations < 1}
   */
  public void run(long maxIterations) {
    if (maxIterations < 1) {
      throw new IllegalArgumentException("maxIterations must be >= 1, was " + maxIterations);
    }
    synchronized (phaseLock) {
      if (started) {
        throw new IllegalStateException("MainLoop '" + name + "' has already been run");
      }
      started = true;
      runner = Thread.currentThread();
      running = true;
    }
    log.info("MainLoop '{}' started on mailbox '{}' with {}", name, requests.name(), config);
    try {
      for (long i = 0; i < maxIterations && !draining; i++) {
        long receivedAt = ticker.read(); // before the receive: no lease is older than this
        List<Message<T, R>> messages = receive();
        heartbeat.beat(); // after receive: an idle loop is a live loop
        for (int m = 0; m < messages.size(); m++) {
          if (draining) {
            handBack(messages.subList(m, messages.size()));
            break;
          }
          handle(messages.get(m), receivedAt);
          heartbeat.beat(); // after each message: processing completes
        }
      }
    } finally {
      flushAcknowledgements();
      synchronized (phaseLock) {
        runner = null;
        running = false;
      }
      log.info("MainLoop '{}' stopped", name);
    }
  }

  /**
   * When the loop stops (drained, shut down or done): makes the acknowledgements the mailbox
   * accepted durable, for a mailbox that defers them ({@link Mailbox#flushAcknowledgements()}).
   */
  private void flushAcknowledgements() {
    try {
      requests.flushAcknowledgements();
    } catch (RuntimeException e) {
      log.warn("MainLoop '{}': could not flush the acknowledgements of mailbox '{}'; those not"
          + " durable are redelivered when their leases expire", name, requests.name(), e);
    }
  }

  private List<Message<T, R>> receive() {
    synchronized (phaseLock) {
      if (draining) {
        return List.of();
      }
      inReceive = true;
    }
    try {
      List<Message<T, R>> received =
          requests.receive(config.maxMessages(), config.visibilityTimeout(), config.waitTime());
      if (receiveFailures > 0) {
        log.info(
            "MainLoop '{}': receive from '{}' works again after {} failures",
            name,
            requests.name(),
            receiveFailures);
        receiveFailures = 0;
      }
      return received;
    } catch (MailboxException e) {
      int failures = receiveFailures + 1;
      receiveFailures = failures;
      Duration delay = receiveBackoff(failures);
      if (failures == 1) {
        log.error(
            "MainLoop '{}': receive from '{}' failed; the loop is not ready until it works again;"
                + " retrying in {}",
            name,
            requests.name(),
            delay,
            e);
      } else {
        log.warn(
            "MainLoop '{}': receive from '{}' failed again ({} in a row: {}); retrying in {}",
            name,
            requests.name(),
            failures,
            e.toString(),
            delay);
      }
      pauseAfterFailure(delay);
      return List.of();
    } finally {
      synchronized (phaseLock) {
        inReceive = false;
        if (draining) {
          Thread.interrupted(); // clear the wake-up interrupt sent by drain() or shutdown()
        }
      }
    }
  }

  /** How often a loop pausing after a failed receive beats. */
  private static final long PAUSE_BEAT_NANOS = Duration.ofSeconds(1).toNanos();

  static Duration receiveBackoff(int failures) {
    int doublings = Math.min(Math.max(0, failures - 1), 10);
    Duration d = RECEIVE_FAILURE_BACKOFF.multipliedBy(1L << doublings);
    return d.compareTo(MAX_RECEIVE_FAILURE_BACKOFF) > 0 ? MAX_RECEIVE_FAILURE_BACKOFF : d;
  }

  private void pauseAfterFailure(Duration delay) {
    long end = ticker.read() + delay.toNanos();
    long beatAt = ticker.read();
    while (true) {
      synchronized (phaseLock) {
        long left;
        while (ticker.read() - beatAt < PAUSE_BEAT_NANOS) {
          if (draining || (left = end - ticker.read()) <= 0) {
            return;
          }
          try {
            // re-check the ticker at least every 50 ms (a settable ticker moves without notifying)
            phaseLock.wait(Math.min(50, Math.max(1, left / 1_000_000)));
          } catch (InterruptedException e) {
            draining = true;
            shutdownRequested = true;
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
      // waiting out a store outage is not a stall: a watchdog must not end the process. Outside
      // the lock, so that a slow heartbeat callback does not hold up drain() or shutdown()
      heartbeat.beat();
      beatAt = ticker.read();
    }
  }

  private void handBack(List<Message<T, R>> messages) {
    String why = shutdownRequested ? "shutting down" : "draining";
    for (Message<T, R> message : messages) {
      try {
        message.handBack();
        safely(() -> listener.handedBack(message));
        log.info("MainLoop '{}': {}, handed message {} back (attempt {} of {} not charged)",
            name, why, message.id(), message.attempt(), message.maxAttempts());
      } catch (MailboxException e) {
        log.warn(
            "MainLoop '{}': could not hand message {} back ({}); it becomes visible when its"
                + " lease expires",
            name,
            message.id(),
            e.getMessage());
      }
    }
  }

  /**
   * How many of a message's deliveries may have gone uncharged (its delivery count less its
   * charged attempts: hand-backs on shutdown, drain or a store outage, and deliveries before an
   * operator's requeue) before a handler stopped by an unreachable store is charged as any
   * failure.
   */
  static final int MAX_UNCHARGED_DELIVERIES = 20;

  /**
   * The {@link dev.tether.mailbox.MailboxConnectionException} that {@code failure} is or was
   * caused by (the store was unreachable), or null.
   */
  private static Throwable storeFailure(Throwable failure) {
    Throwable t = failure;
    for (int depth = 0; t != null && depth < 20; depth++, t = t.getCause()) {
      if (t instanceof dev.tether.mailbox.MailboxConnectionException) {
        return t;
      }
    }
    return null;
  }

  private void handle(Message<T, R> message, long receivedAt) {
    safely(() -> listener.received(message));
    try {
      process(message, receivedAt);
    } finally {
      safely(() -> listener.finished(message));
    }
  }

  /**
   * The latest ticker reading from which the message's lease surely lasts its visibility timeout:
   * the request that granted it when the mailbox says when that was (a long poll may have waited
   * longer than the visibility timeout before it), never earlier than before the receive.
   */
  private long leaseStart(Message<T, R> message, long receivedAt) {
    java.util.OptionalLong requested = message.leaseRequestedAtNanos();
    if (requested.isEmpty()) {
      return receivedAt;
    }
    long ago = System.nanoTime() - requested.getAsLong();
    long start = ticker.read() - Math.max(0, ago);
    return start - receivedAt > 0 ? start : receivedAt;
  }

  private void process(Message<T, R> message, long receivedAt) {
    long start = ticker.read();
    if (message.errorReply().isPresent()) {
      // An error reply has no body for a handler: keep it where operators look.
      fail(message, new dev.tether.mailbox.RequestFailedException(message.errorReply().get()),
          Duration.ZERO, "an error reply cannot be handled by a handler");
      return;
    }
    R result = null;
    Exception failure = null;
    boolean leaseLost;
    boolean cancelled;
    try (LeaseExtender.Attachment attachment = extender.attach(message, heartbeat)) {
      attachment.leaseHeldUntil(leaseStart(message, receivedAt) + config.visibilityTimeout().toNanos());
      Deadline deadline = config.deadline().map(d -> Deadline.after(d, ticker)).orElse(null);
      if (deadline != null) {
        attachment.extendUntil(deadline.nanos());
      }
      WorkContext context = WorkContext.builder(heartbeat)
          .attachment(attachment)
          .shutdownRequested(() -> shutdownRequested)
          .deadline(deadline)
          .onCheckpoint(bytes -> safely(() -> listener.checkpointed(message, bytes)))
          .build();
      DeadlineTimer.Watch watch = deadline == null ? null
          : (deadlineTimer != null ? deadlineTimer : DeadlineTimer.shared()).interruptAt(Thread.currentThread(), config.deadline().get(),
              () -> log.warn("MainLoop '{}': message {} passed its deadline of {}; interrupting"
                  + " its handler", name, message.id(), config.deadline().get()));
      // a cancellation reaches the handler's context as soon as the mailbox learns of it
      Message.Subscription cancelWatch = message.watchCancellation(attachment::markCancelled);
      try {
        result = handler.handle(message.body(), context);
      } catch (Exception e) {
        failure = e;
      } finally {
        cancelWatch.close();
        if (watch != null && watch.cancel()) {
          Thread.interrupted(); // the interrupt was for the handler, not for the loop
          if (failure == null) {
            failure = new WorkStoppedException(WorkStoppedException.Reason.DEADLINE,
                "message " + message.id() + " passed its deadline of " + config.deadline().get());
          }
        }
      }
      leaseLost = attachment.isLeaseLost();
      cancelled = attachment.isCancelled();
    }
    Duration took = Duration.ofNanos(ticker.read() - start);
    if (failure instanceof WorkStoppedException) {
      WorkStoppedException stopped = (WorkStoppedException) failure;
      switch (stopped.reason()) {
        case CANCELLED:
          log.warn("MainLoop '{}': message {} stopped early, it was cancelled", name, message.id());
          safely(() -> listener.cancelled(message));
          return;
        case LEASE_LOST:
          log.warn("MainLoop '{}': message {} stopped early, lease lost", name, message.id());
          safely(() -> listener.leaseLost(message));
          return;
        case SHUTDOWN:
          handBack(List.of(message));
          return;
        default:
          break;
      }
    }
    if (failure != null && shutdownRequested && !leaseLost && !cancelled
        && isInterruption(failure)) {
      // stopped by the shutdown (the group's deadline interrupts what ignores the request)
      handBack(List.of(message));
      return;
    }
    Throwable unreachable = failure == null ? null : storeFailure(failure);
    if (unreachable != null && !leaseLost && !cancelled && !requests.isAvailable()
        && message.deliveryCount() - message.attempt() < MAX_UNCHARGED_DELIVERIES) {
      // the store, not the work, failed (a checkpoint during a database restart or failover;
      // the mailbox's store saw it too, so it was not another store the handler writes to): the
      // attempt is not charged, and the next delivery resumes from the last checkpoint. Bounded,
      // so that a handler that meets it every time still reaches its budget
      String why = firstLine(String.valueOf(unreachable.getMessage()));
      try {
        message.handBack();
        safely(() -> listener.handedBack(message));
        log.warn("MainLoop '{}': message {} stopped because the store could not be reached ({});"
            + " handed it back (attempt {} of {} not charged)", name, message.id(), why,
            message.attempt(), message.maxAttempts());
        return;
      } catch (MailboxException e) {
        // still unreachable: a failure as any other (its nack may fail too; then the lease expires)
        log.warn("MainLoop '{}': message {} stopped because the store could not be reached ({}),"
            + " and could not be handed back ({})", name, message.id(), why, e.getMessage());
      }
    }
    if (failure == null) {
      complete(message, result, took, leaseLost);
    } else if (cancelled) {
      log.warn("MainLoop '{}': message {} was cancelled while its handler ran ({})", name,
          message.id(), failure.toString());
      safely(() -> listener.cancelled(message));
    } else {
      fail(message, failure, took, null);
    }
  }

  private void complete(Message<T, R> message, R result, Duration took, boolean leaseLost) {
    try {
      message.replyAndAcknowledge(result);
      safely(() -> listener.completed(message, took));
    } catch (ReceiptHandleExpiredException e) {
      log.warn(
          "MainLoop '{}': result of message {} discarded: its lease was lost{} ({})",
          name,
          message.id(),
          leaseLost ? " during processing" : "",
          e.getMessage());
      safely(() -> listener.leaseLost(message));
    } catch (MailboxException e) {
      log.error(
          "MainLoop '{}': could not acknowledge message {}; it will be redelivered after its"
              + " lease expires",
          name,
          message.id(),
          e);
    }
  }

  /** Ends a failed attempt: dead-letters it (why: {@code forced}, else the policy) or nacks it. */
  private void fail(Message<T, R> message, Exception failure, Duration took, String forced) {
    DeadLetterPolicy.Decision decision = forced != null
        ? DeadLetterPolicy.Decision.deadLetter(forced + ": " + failure.getMessage())
        : config.deadLetterPolicy().decide(message.attempt(), message.maxAttempts(), failure);
    safely(() -> listener.failed(message, failure, decision, took));
    try {
      if (decision.isDeadLetter()) {
        log.warn("MainLoop '{}': message {} dead-lettered after attempt {} of {}: {}", name,
            message.id(), message.attempt(), message.maxAttempts(), firstLine(decision.reason()),
            failure instanceof dev.tether.mailbox.MailboxException ? null : traceOf(failure));
        message.deadLetter(decision.reason());
        safely(() -> listener.deadLettered(message));
      } else {
        NackOutcome outcome = message.nack(decision.delay(), reasonOf(failure));
        if (outcome == NackOutcome.DEAD_LETTERED) {
          safely(() -> listener.deadLettered(message));
          log.warn("MainLoop '{}': message {} dead-lettered after attempt {} of {} (its budget"
              + " is spent): {}", name, message.id(), message.attempt(),
              message.maxAttempts(), firstLine(reasonOf(failure)), traceOf(failure));
        } else {
          log.warn("MainLoop '{}': message {} failed on attempt {} of {}; retrying after {}: {}",
              name, message.id(), message.attempt(), message.maxAttempts(),
              dev.tether.DurationText.of(decision.delay()), firstLine(reasonOf(failure)),
              traceOf(failure));
        }
      }
    } catch (ReceiptHandleExpiredException e) {
      log.warn(
          "MainLoop '{}': message {} failed but its lease was already lost ({})",
          name,
          message.id(),
          e.getMessage());
    } catch (MailboxException e) {
      log.error(
          "MainLoop '{}': could not nack or dead-letter message {}; it will be redelivered"
              + " after its lease expires",
          name,
          message.id(),
          e);
    }
  }

  private static boolean isInterruption(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof InterruptedException || t instanceof java.io.InterruptedIOException) {
        return true;
      }
    }
    return false;
  }

  /** Longest failure text recorded with a message. */
  static final int MAX_REASON_CHARS = 8000;

  /** The failure as recorded with the message: its {@code toString()}, bounded. */
  static String reasonOf(Throwable failure) {
    String text = String.valueOf(failure);
    return text.length() <= MAX_REASON_CHARS ? text : text.substring(0, MAX_REASON_CHARS - 3) + "...";
  }

  private void safely(Runnable listenerCall) {
    try {
      listenerCall.run();
    } catch (RuntimeException e) {
      log.error("MainLoop '{}': listener failed; ignored", name, e);
    }
  }

  /**
   * Runs this loop's handler on {@code request} without a message, as a nested loop: the handler's
   * beats go to {@code outer}'s heartbeat (extending the outer message's lease), and it sees the
   * outer work's deadline and stop signals.
   *
   * @param request the request
   * @param outer the outer work's context
   * @return the handler's result
   * @throws Exception whatever the handler throws
   */
  public R execute(T request, WorkContext outer) throws Exception {
    Objects.requireNonNull(outer, "outer");
    WorkContext.Builder b =
        WorkContext.builder(outer.heartbeat())
            .leaseLost(outer::isLeaseLost)
            .shutdownRequested(() -> shutdownRequested || outer.isShutdownRequested());
    outer.messageId().ifPresent(id -> b.message(id, outer.deliveryCount()));
    Deadline deadline = outer.deadline().orElse(null);
    if (config.deadline().isPresent()) {
      Deadline own = Deadline.after(config.deadline().get(), ticker);
      deadline = deadline == null ? own : deadline.min(own);
    }
    b.deadline(deadline);
    return handler.handle(request, b.build());
  }

  /**
   * Stops receiving and lets the running handler finish: its beats keep extending its lease, and
   * its outcome is acknowledged or failed as usual; messages received but not started are handed
   * back. The loop's {@code run} returns once the handler is done. Returns at once; idempotent;
   * callable from any thread. {@link #shutdown()} may follow to ask the handler to stop.
   */
  @Override
  public void drain() {
    synchronized (phaseLock) {
      if (!draining) {
        draining = true;
        log.info("MainLoop '{}': draining: no more receives; the running handler may finish", name);
      }
      if (inReceive && runner != null) {
        runner.interrupt(); // wake a long-poll receive; cleared again when receive returns
      }
      phaseLock.notifyAll();
    }
  }

  /**
   * Stops receiving (as {@link #drain()}) and asks the running handler to stop: its context's
   * {@link WorkContext#isShutdownRequested()} turns true. A handler that gives up with {@link
   * WorkStoppedException} ({@code SHUTDOWN}) or an interruption has its message handed back, not
   * charged. Returns at once; idempotent; callable from any thread.
   */
  @Override
  public void shutdown() {
    synchronized (phaseLock) {
      draining = true;
      if (!shutdownRequested) {
        shutdownRequested = true;
        log.info("MainLoop '{}': shutdown requested", name);
      }
      if (inReceive && runner != null) {
        runner.interrupt(); // wake a long-poll receive; cleared again when receive returns
      }
      phaseLock.notifyAll();
    }
  }

  @Override
  public String toString() {
    return "MainLoop[" + name + ", running=" + running + ", mailbox=" + requests.name() + "]";
  }

  /**
   * Observes a {@link MainLoop}, for metrics. Methods run on the loop's thread, must be fast and
   * should not throw.
   */
  public interface Listener {
    /** A listener that ignores everything. */
    Listener NONE = new Listener() {};

    /**
     * Returns a listener that tells each of {@code listeners}, in order, of every event; one that
     * throws is logged and does not keep the others from hearing of it.
     *
     * @param listeners the listeners
     * @return the listener
     */
    static Listener all(Listener... listeners) {
      return new Listeners(List.of(listeners));
    }

    /**
     * A message was received and is about to be handled.
     *
     * @param message the message
     */
    default void received(Message<?, ?> message) {}

    /**
     * A message was handled and acknowledged.
     *
     * @param message the message
     * @param took the handler's duration
     */
    default void completed(Message<?, ?> message, Duration took) {}

    /**
     * A handler failed; the decision says whether the message is retried or dead-lettered.
     *
     * @param message the message
     * @param error the failure
     * @param decision the policy's decision
     * @param took the handler's duration
     */
    default void failed(
        Message<?, ?> message,
        Exception error,
        DeadLetterPolicy.Decision decision,
        Duration took) {}

    /**
     * A failed message was dead-lettered by this loop (the policy said so, or its budget is
     * spent); called after {@link #failed} once the store confirmed it.
     *
     * @param message the message
     */
    default void deadLettered(Message<?, ?> message) {}

    /**
     * The lease of a message was lost; its result, if any, was discarded.
     *
     * @param message the message
     */
    default void leaseLost(Message<?, ?> message) {}

    /**
     * A message was cancelled while its handler ran; the handler's outcome was discarded.
     *
     * @param message the message
     */
    default void cancelled(Message<?, ?> message) {}

    /**
     * A message was handed back without charging its attempt (the loop is shutting down, or its
     * handler stopped because the store could not be reached).
     *
     * @param message the message
     */
    default void handedBack(Message<?, ?> message) {}

    /**
     * The handler recorded a progress checkpoint through its {@link WorkContext} (durable when
     * this is called).
     *
     * @param message the message
     * @param bytes the checkpoint's size in bytes
     */
    default void checkpointed(Message<?, ?> message, int bytes) {}

    /**
     * The loop is done with a message it {@linkplain #received received}, whatever the outcome:
     * called last, exactly once per {@code received}, on the same thread (so a listener may keep
     * per-message state, such as an open tracing scope, between the two).
     *
     * @param message the message
     */
    default void finished(Message<?, ?> message) {}
  }

  /**
   * Builds a {@link MainLoop}. Not thread-safe.
   *
   * @param <T> the request type
   * @param <R> the result type
   */
  public static final class Builder<T, R> {
    private final String name;
    private final Mailbox<T, R> requests;
    private final Handler<T, R> handler;
    private MainLoopConfig config = MainLoopConfig.defaults();
    private Ticker ticker = Ticker.system();
    private Heartbeat heartbeat;
    private Listener listener = Listener.NONE;
    private LeaseExtender.Listener extenderListener = LeaseExtender.Listener.NONE;
    private DeadlineTimer deadlineTimer;

    private Builder(String name, Mailbox<T, R> requests, Handler<T, R> handler) {
      this.name = Objects.requireNonNull(name, "name");
      if (name.isBlank()) {
        throw new IllegalArgumentException("loop name must not be blank");
      }
      this.requests = Objects.requireNonNull(requests, "requests");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /**
     * Sets the configuration.
     *
     * @param config the configuration
     * @return this builder
     */
    public Builder<T, R> config(MainLoopConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /**
     * Sets the monotonic ticker for deadlines, rate limits and the loop's heartbeat.
     *
     * @param ticker the ticker
     * @return this builder
     */
    public Builder<T, R> ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Uses {@code heartbeat} as the loop's heartbeat instead of a new one (it must read the same
     * ticker).
     *
     * @param heartbeat the heartbeat
     * @return this builder
     */
    public Builder<T, R> heartbeat(Heartbeat heartbeat) {
      this.heartbeat = Objects.requireNonNull(heartbeat, "heartbeat");
      return this;
    }

    /**
     * Sets the loop's listener.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder<T, R> listener(Listener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Sets the lease extender's listener.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder<T, R> extenderListener(LeaseExtender.Listener listener) {
      this.extenderListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** Uses {@code timer} for deadline interruptions instead of the shared one (tests). */
    Builder<T, R> deadlineTimer(DeadlineTimer timer) {
      this.deadlineTimer = Objects.requireNonNull(timer, "timer");
      return this;
    }

    /**
     * Builds the loop.
     *
     * @return the loop
     * @throws IllegalArgumentException if a heartbeat was given that reads another ticker
     */
    public MainLoop<T, R> build() {
      if (heartbeat != null && heartbeat.ticker() != ticker) {
        throw new IllegalArgumentException(
            "the heartbeat must read the loop's ticker: deadlines and rate limits compare them");
      }
      return new MainLoop<>(this);
    }
  }

  /** The first line of a message (a failure report's summary), or the message if it has one line. */
  private static String firstLine(String s) {
    if (s == null) {
      return null;
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl) + " (more in the item's error)";
  }

  /**
   * The failure to log with its stack trace, or null for an ordinary failure report: an exception
   * that carries no stack trace (its thrower chose a report over a trace, as a command's non-zero
   * exit) is logged as its first line only.
   */
  private static Throwable traceOf(Throwable failure) {
    return failure.getStackTrace().length == 0 && failure.getCause() == null ? null : failure;
  }
}
