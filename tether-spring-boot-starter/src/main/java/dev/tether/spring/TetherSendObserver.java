package dev.tether.spring;

import java.util.Map;
import java.util.function.Function;

/**
 * Wraps each send of {@link TetherQueues} (tracing: the send runs inside an observation whose
 * trace context is stored with the message as headers). The starter supplies one when Micrometer
 * Observation is present.
 */
@FunctionalInterface
public interface TetherSendObserver {

  /** Sends without observing: no headers. */
  TetherSendObserver NONE = (queue, send) -> send.apply(Map.of());

  /**
   * Runs {@code send} with the headers to store with the message and returns its result.
   *
   * @param queue the queue sent to
   * @param send sends with the given headers and returns the message's id
   * @return the message's id
   */
  String observe(String queue, Function<Map<String, String>, String> send);
}
