package dev.tether.langchain4j;

import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.test.SettableClock;
import dev.tether.test.SettableTicker;
import dev.tether.loop.Deadline;
import dev.tether.loop.WorkContext;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One delivery of one message, with the context a MainLoop would give its handler, built by hand
 * so that a test can mark the lease lost, the message cancelled, or the loop shutting down, and
 * count beats.
 */
final class Delivery implements AutoCloseable {
  final SettableClock clock = new SettableClock();
  final SettableTicker ticker = new SettableTicker();
  final InMemoryMailbox<String, String> mailbox =
      InMemoryMailbox.<String, String>builder("agent-tasks").clock(clock).build();
  final Heartbeat heartbeat = new Heartbeat(ticker);
  final AtomicInteger beats = new AtomicInteger();
  final AtomicBoolean shutdown = new AtomicBoolean();
  final Message<String, String> message;
  final LeaseExtender.Attachment attachment;
  final WorkContext context;

  Delivery() {
    this(null, null);
  }

  Delivery(Duration deadline, byte[] checkpoint) {
    mailbox.send("task");
    Message<String, String> first = mailbox.receive(1, Duration.ofSeconds(10), Duration.ZERO).get(0);
    if (checkpoint != null) { // an earlier delivery's progress
      first.checkpoint(checkpoint);
      first.handBack();
      first = mailbox.receive(1, Duration.ofSeconds(10), Duration.ZERO).get(0);
    }
    message = first;
    heartbeat.addCallback(beats::incrementAndGet);
    attachment = new LeaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(1), Duration.ofSeconds(10)))
        .attach(message, heartbeat);
    attachment.leaseHeldUntil(ticker.read() + Duration.ofSeconds(10).toNanos());
    context = WorkContext.builder(heartbeat)
        .attachment(attachment)
        .shutdownRequested(shutdown::get)
        .deadline(deadline == null ? null : Deadline.after(deadline, ticker))
        .build();
  }

  void advance(Duration d) {
    clock.advance(d);
    ticker.advance(d);
  }

  @Override
  public void close() {
    attachment.close();
    mailbox.close();
  }
}
