package dev.tether.mailbox;

import java.time.Duration;
import java.util.List;

/** A mailbox that forwards everything to another; tests override the calls they stage. */
public class ForwardingMailbox<T, R> implements Mailbox<T, R> {
  private final String name;
  /** The mailbox calls are forwarded to. */
  protected final Mailbox<T, R> delegate;

  /**
   * Creates a forwarding mailbox.
   *
   * @param name the name it reports
   * @param delegate where calls go
   */
  public ForwardingMailbox(String name, Mailbox<T, R> delegate) {
    this.name = name;
    this.delegate = delegate;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String send(T body) {
    return delegate.send(body);
  }

  @Override
  public String send(T body, Mailbox<R, ?> replyTo) {
    return delegate.send(body, replyTo);
  }

  @Override
  public List<Message<T, R>> receive(int max, Duration visibility, Duration wait) {
    return delegate.receive(max, visibility, wait);
  }

  @Override
  public long approximateCount() {
    return delegate.approximateCount();
  }

  @Override
  public long purge() {
    return delegate.purge();
  }

  @Override
  public boolean isAvailable() {
    return delegate.isAvailable();
  }

  /** Does not close the delegate (the test owns it). */
  @Override
  public void close() {}
}
