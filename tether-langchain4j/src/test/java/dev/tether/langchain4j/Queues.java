package dev.tether.langchain4j;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.TestDatabase;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Mailbox;
import java.time.Clock;

/**
 * The two queues of the agent tests (tasks and their results) on one backend: in memory, a SQLite
 * file in a temp directory, or a fresh PostgreSQL schema on the tests' server ({@link
 * TestDatabase}: never mocked, never skipped). Time is the given clock's.
 */
abstract class Queues implements AutoCloseable {
  /** Which backend. */
  enum Kind {
    IN_MEMORY,
    SQLITE,
    POSTGRES
  }

  abstract Mailbox<String, String> requests();

  abstract Mailbox<String, String> replies();

  /** The URL a child process opens, for the durable backends. */
  abstract String url();

  @Override
  public abstract void close();

  static Queues open(Kind kind, Clock clock) {
    return switch (kind) {
      case IN_MEMORY -> new InMemory(clock);
      case SQLITE -> new Durable(TestDatabase.sqlite(), clock);
      case POSTGRES -> new Durable(TestDatabase.postgres(), clock);
    };
  }

  private static final class InMemory extends Queues {
    private final InMemoryMailbox<String, String> requests;
    private final InMemoryMailbox<String, String> replies;

    InMemory(Clock clock) {
      requests = InMemoryMailbox.<String, String>builder("agent-tasks").clock(clock).build();
      replies = InMemoryMailbox.<String, String>builder("agent-results").clock(clock).build();
    }

    @Override
    Mailbox<String, String> requests() {
      return requests;
    }

    @Override
    Mailbox<String, String> replies() {
      return replies;
    }

    @Override
    String url() {
      throw new UnsupportedOperationException("an in-memory queue cannot be shared with a process");
    }

    @Override
    public void close() {
      requests.close();
      replies.close();
    }
  }

  private static final class Durable extends Queues {
    private final TestDatabase db;
    private final TetherStore store;
    private final JdbcMailbox<String, String> requests;
    private final JdbcMailbox<String, String> replies;

    Durable(TestDatabase db, Clock clock) {
      this.db = db;
      this.store = TetherStore.open(db.url(),
          TetherStoreConfig.builder().clock(clock).maximumPoolSize(6).build());
      requests = JdbcMailbox.ofStrings(store, "agent-tasks");
      replies = JdbcMailbox.ofStrings(store, "agent-results");
    }

    @Override
    Mailbox<String, String> requests() {
      return requests;
    }

    @Override
    Mailbox<String, String> replies() {
      return replies;
    }

    @Override
    String url() {
      return db.url();
    }

    @Override
    public void close() {
      requests.close();
      replies.close();
      store.close();
      db.close();
    }
  }
}
