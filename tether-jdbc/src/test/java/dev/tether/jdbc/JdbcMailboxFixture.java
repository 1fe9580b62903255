package dev.tether.jdbc;

import dev.tether.Codec;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.MailboxFixture;
import dev.tether.mailbox.MailboxSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Creates JdbcMailboxes for the shared contract suites on one store (a test class's own SQLite
 * file or PostgreSQL schema). Each fixture uses a fresh queue-name prefix, so fixtures sharing the
 * store never see each other's messages. The spec's clock decides every instant and expiry.
 */
final class JdbcMailboxFixture implements MailboxFixture {
  private static final AtomicLong SEQUENCE = new AtomicLong();

  private final TetherStore store;
  private final String prefix = "f" + SEQUENCE.incrementAndGet() + "-";
  private final List<JdbcMailbox<String, String>> created = new ArrayList<>();

  JdbcMailboxFixture(TetherStore store) {
    this.store = store;
  }

  @Override
  public Mailbox<String, String> create(String name, MailboxSpec spec) {
    JdbcMailbox<String, String> m =
        JdbcMailbox.builder(store, prefix + name, Codec.utf8(), Codec.utf8())
            .maxAttempts(spec.maxAttempts())
            .capacity(spec.capacity())
            .clock(spec.clock())
            .pollInterval(java.time.Duration.ofMillis(20))
            .build();
    synchronized (created) {
      created.add(m);
    }
    return m;
  }

  @Override
  public List<String> deadLetteredIds(Mailbox<String, String> mailbox) {
    return ((JdbcMailbox<String, String>) mailbox).deadLetteredIds();
  }

  @Override
  public boolean supportsCapacity() {
    return true;
  }

  @Override
  public void close() {
    synchronized (created) {
      created.forEach(JdbcMailbox::close);
      created.clear();
    }
  }
}
