package dev.tether.cli.internal;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SIGTERM and SIGINT as a stop request that a long-running command ({@code worker}, {@code serve})
 * handles itself, so that it can end with its own exit status: the JVM's own handling runs the
 * shutdown hooks and then always exits with 128 + the signal's number (143 for SIGTERM), even after
 * a clean shutdown, which a supervisor (systemd, Kubernetes) then reports as a failure.
 *
 * <p>{@link #install()} replaces the JVM's handlers for the two signals until {@link #close()},
 * which restores them. A signal then only releases {@link #awaitStop()}; the command stops its
 * work on its own thread and returns its exit status. A signal after the first runs the action
 * given to {@link #onRepeat(Runnable)} (a worker stops draining and hands its work back at once),
 * or is logged and otherwise ignored (the shutdown under way is bounded). {@link #stop()} releases
 * the waiters without a signal (for example when the work ended by itself).
 *
 * <p>The handlers use {@code sun.misc.Signal} (module {@code jdk.unsupported}), reached by
 * reflection because the compiler warns on every direct use of it. Where it is missing or refused
 * (a JVM run with {@code -Xrs}, a signal the JVM ignores because it was ignored when the JVM
 * started), that signal keeps the JVM's handling: {@link #handles(String)} tells which.
 *
 * <p>Thread-safe.
 */
public final class StopSignals implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(StopSignals.class);

  /** The signals handled, by their names without {@code SIG}. */
  public static final List<String> SIGNALS = List.of("TERM", "INT");

  private final CountDownLatch stop = new CountDownLatch(1);
  private final AtomicReference<String> received = new AtomicReference<>();
  private final List<Runnable> restore = new ArrayList<>();
  private final List<String> handled = new ArrayList<>();
  private volatile Runnable onRepeat;

  private StopSignals() {}

  /**
   * Handles {@link #SIGNALS} until {@link #close()}; a signal that cannot be handled keeps the
   * JVM's handling (logged at debug).
   *
   * @return the installed handlers
   */
  public static StopSignals install() {
    StopSignals s = new StopSignals();
    try {
      Class<?> signalClass = Class.forName("sun.misc.Signal");
      Class<?> handlerClass = Class.forName("sun.misc.SignalHandler");
      Constructor<?> newSignal = signalClass.getConstructor(String.class);
      Method handle = signalClass.getMethod("handle", signalClass, handlerClass);
      Method getName = signalClass.getMethod("getName");
      InvocationHandler onSignal =
          (proxy, method, args) -> {
            switch (method.getName()) {
              case "handle":
                s.received((String) getName.invoke(args[0]));
                return null;
              case "equals":
                return proxy == args[0];
              case "hashCode":
                return System.identityHashCode(proxy);
              case "toString":
                return "tether stop-signal handler";
              default:
                throw new UnsupportedOperationException(method.getName());
            }
          };
      Object handler =
          Proxy.newProxyInstance(
              StopSignals.class.getClassLoader(), new Class<?>[] {handlerClass}, onSignal);
      Object ignored = handlerClass.getField("SIG_IGN").get(null);
      for (String name : SIGNALS) {
        try {
          Object signal = newSignal.newInstance(name);
          Object previous = handle.invoke(null, signal, handler);
          if (previous == ignored) {
            // the JVM leaves a signal that was ignored at its start ignored, and installs nothing
            log.warn("SIG{} was ignored when this process started (inherited from its parent, as"
                + " a shell without job control starts background commands with SIGINT): it"
                + " does nothing here; stop this process with SIG{}", name,
                name.equals("INT") ? "TERM" : "INT");
            continue;
          }
          s.handled.add(name);
          s.restore.add(() -> {
            try {
              handle.invoke(null, signal, previous);
            } catch (ReflectiveOperationException | RuntimeException e) {
              log.debug("Could not restore the JVM's handler of SIG{}", name, e);
            }
          });
        } catch (InvocationTargetException e) {
          log.debug("SIG{} keeps the JVM's handling: {}", name, e.getCause().toString());
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      log.debug("SIGTERM and SIGINT keep the JVM's handling (exit 128 + signal)", e);
    }
    return s;
  }

  private void received(String name) {
    if (received.compareAndSet(null, name)) {
      log.info("SIG{} received: stopping", name);
      stop.countDown();
    } else {
      Runnable action = onRepeat;
      if (action == null) {
        log.info("SIG{} received again: already stopping (SIGKILL ends the process at once)", name);
        return;
      }
      log.info("SIG{} received again: stopping at once", name);
      try {
        action.run();
      } catch (RuntimeException e) {
        log.error("Stopping at once after a second SIG{} failed", name, e);
      }
    }
  }

  /**
   * Sets what a signal after the first does (run on the JVM's signal thread: it must return
   * quickly); by default it is only logged.
   *
   * @param action the action
   * @return this
   */
  public StopSignals onRepeat(Runnable action) {
    this.onRepeat = java.util.Objects.requireNonNull(action, "action");
    return this;
  }

  /**
   * Returns whether this process handles the signal itself (else the JVM does: hooks, then exit 128
   * + its number).
   *
   * @param name {@code TERM} or {@code INT}
   * @return whether it is handled
   */
  public boolean handles(String name) {
    synchronized (handled) {
      return handled.contains(name);
    }
  }

  /**
   * Waits for a signal or {@link #stop()}.
   *
   * @throws InterruptedException if interrupted while waiting
   */
  public void awaitStop() throws InterruptedException {
    stop.await();
  }

  /**
   * Waits for a signal or {@link #stop()}, at most {@code timeout}.
   *
   * @param timeout the longest wait
   * @return true if a stop was requested
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean awaitStop(Duration timeout) throws InterruptedException {
    return stop.await(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
  }

  /** Releases {@link #awaitStop()} without a signal. Idempotent. */
  public void stop() {
    stop.countDown();
  }

  /**
   * Returns the first signal received.
   *
   * @return its name ({@code TERM}, {@code INT}), or empty if none was received
   */
  public Optional<String> signal() {
    return Optional.ofNullable(received.get());
  }

  /** Gives the signals back to the JVM's handling. Idempotent. */
  @Override
  public void close() {
    List<Runnable> r;
    synchronized (handled) {
      r = new ArrayList<>(restore);
      restore.clear();
      handled.clear();
    }
    r.forEach(Runnable::run);
  }
}
