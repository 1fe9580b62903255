package dev.tether.spring;

import dev.tether.Codec;
import dev.tether.LeaseExtenderConfig;
import dev.tether.loop.Handler;
import java.time.Duration;

/**
 * A handler bean: the starter runs it on its queue, in {@link #concurrency()} loops, each
 * receiving one message at a time whose lease is extended for as long as the handler beats.
 *
 * <pre>{@code
 * @Component
 * class ResizeHandler implements TetherHandler<Resize, Resized> {
 *   public String queue() { return "images"; }
 *   public int concurrency() { return 4; }
 *   public Resized handle(Resize request, WorkContext context) {
 *     for (Tile tile : tiles(request)) {
 *       render(tile);
 *       context.beat(); // proof of work: keeps the lease while the work goes on
 *     }
 *     return new Resized(...);
 *   }
 * }
 * }</pre>
 *
 * <p>Every setting but the queue has a default; a method returning {@code null} (or 0) takes
 * the application's default from {@code tether.handler-defaults.*}. Request and result bodies
 * are stored with the codec for their type: UTF-8 text for {@code String}, bytes as they are for
 * {@code byte[]}, JSON (Jackson) for anything else, unless the handler names its own.
 *
 * <p>{@link #handle} runs on the loop's thread ({@code tether-loop-<queue>-<n>}), never
 * concurrently with itself within one loop; with a concurrency above 1 the handler bean must be
 * thread-safe.
 *
 * @param <T> the request type
 * @param <R> the result type
 */
public interface TetherHandler<T, R> extends Handler<T, R> {

  /**
   * Returns the queue this handler works on.
   *
   * @return a queue name
   */
  String queue();

  /**
   * Returns how many messages of the queue this process handles at once (one loop each).
   *
   * @return 1..64, or 0 for {@code tether.handler-defaults.concurrency}
   */
  default int concurrency() {
    return 0;
  }

  /**
   * Returns how long a received message stays invisible to other workers before a beat extends
   * it.
   *
   * @return the visibility timeout, or null for {@code tether.handler-defaults.visibility}
   */
  default Duration visibility() {
    return null;
  }

  /**
   * Returns how beats extend the lease: at most once per interval, by the extension.
   *
   * @return the extender's settings, or null for {@code tether.handler-defaults.extend-every} and
   *     {@code tether.handler-defaults.extension}
   */
  default LeaseExtenderConfig extender() {
    return null;
  }

  /**
   * Returns the budget of charged attempts of the messages this application sends to the queue.
   *
   * @return 1..100, or 0 for {@code tether.handler-defaults.max-attempts}
   */
  default int maxAttempts() {
    return 0;
  }

  /**
   * Returns the longest a handler may work on one message; past it the lease is no longer
   * extended and the handler's thread is interrupted.
   *
   * @return the deadline, or null for none ({@code tether.handler-defaults.deadline})
   */
  default Duration deadline() {
    return null;
  }

  /**
   * Returns the codec of requests.
   *
   * @return the codec, or null for the codec of the request type
   */
  default Codec<T> requestCodec() {
    return null;
  }

  /**
   * Returns the codec of results (replies, and results kept as outputs).
   *
   * @return the codec, or null for the codec of the result type
   */
  default Codec<R> resultCodec() {
    return null;
  }
}
