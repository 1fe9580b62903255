package dev.tether.loop;

import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link MainLoop.Listener#all}: each event to each listener in order, each one isolated. */
final class Listeners implements MainLoop.Listener {
  private static final Logger log = LoggerFactory.getLogger(Listeners.class);

  private final List<MainLoop.Listener> listeners;

  Listeners(List<MainLoop.Listener> listeners) {
    this.listeners = listeners;
  }

  private void each(Consumer<MainLoop.Listener> event) {
    for (MainLoop.Listener l : listeners) {
      try {
        event.accept(l);
      } catch (RuntimeException e) {
        log.error("MainLoop listener {} failed; ignored", l, e);
      }
    }
  }

  @Override
  public void received(Message<?, ?> message) {
    each(l -> l.received(message));
  }

  @Override
  public void completed(Message<?, ?> message, Duration took) {
    each(l -> l.completed(message, took));
  }

  @Override
  public void failed(Message<?, ?> message, Exception error, DeadLetterPolicy.Decision decision,
      Duration took) {
    each(l -> l.failed(message, error, decision, took));
  }

  @Override
  public void deadLettered(Message<?, ?> message) {
    each(l -> l.deadLettered(message));
  }

  @Override
  public void leaseLost(Message<?, ?> message) {
    each(l -> l.leaseLost(message));
  }

  @Override
  public void cancelled(Message<?, ?> message) {
    each(l -> l.cancelled(message));
  }

  @Override
  public void handedBack(Message<?, ?> message) {
    each(l -> l.handedBack(message));
  }

  @Override
  public void checkpointed(Message<?, ?> message, int bytes) {
    each(l -> l.checkpointed(message, bytes));
  }

  @Override
  public void finished(Message<?, ?> message) {
    each(l -> l.finished(message));
  }

  @Override
  public String toString() {
    return "MainLoop.Listener.all" + listeners;
  }
}
