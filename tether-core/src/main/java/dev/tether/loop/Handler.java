package dev.tether.loop;

/**
 * The user's work: turns a request into a result, beating the context's heartbeat as it makes
 * progress.
 *
 * <p>A handler that returns normally has its result replied (when the message has a reply-to
 * mailbox) and the message acknowledged, as one step. A handler that throws has its message handed
 * back with a backoff or dead-lettered, as the loop's {@link dev.tether.mailbox.DeadLetterPolicy}
 * decides. Handlers run on the loop's thread, one message at a time.
 *
 * @param <T> the request type
 * @param <R> the result type
 */
@FunctionalInterface
public interface Handler<T, R> {

  /**
   * Processes one request.
   *
   * @param request the message body
   * @param context the heartbeat, deadline and stop signals of this work
   * @return the result
   * @throws Exception to fail this delivery
   */
  R handle(T request, WorkContext context) throws Exception;
}
