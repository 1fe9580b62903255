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
final class Queues implements AutoCloseable {
  /** Which backend. */
  enum Kind {
    IN_MEMORY,
    SQLITE,
    POSTGRES
  }

  private final Mailbox<String, String> requests;
  private final Mailbox<String, String> replies;
  /** The durable backends' store and database; null in memory. */
  private final TetherStore store;
  private final TestDatabase db;

  private Queues(Mailbox<String, String> requests, Mailbox<String, String> replies, TetherStore store,
      TestDatabase db) {
    this.requests = requests;
    this.replies = replies;
    this.store = store;
    this.db = db;
  }

  static Queues open(Kind kind, Clock clock) {
    return switch (kind) {
      case IN_MEMORY -> new Queues(
          InMemoryMailbox.<String, String>builder("agent-tasks").clock(clock).build(),
          InMemoryMailbox.<String, String>builder("agent-results").clock(clock).build(), null, null);
      case SQLITE -> durable(TestDatabase.sqlite(), clock);
      case POSTGRES -> durable(TestDatabase.postgres(), clock);
    };
  }

  private static Queues durable(TestDatabase db, Clock clock) {
    TetherStore store = TetherStore.open(db.url(),
        TetherStoreConfig.builder().clock(clock).maximumPoolSize(6).build());
    return new Queues(JdbcMailbox.ofStrings(store, "agent-tasks"),
        JdbcMailbox.ofStrings(store, "agent-results"), store, db);
  }

  Mailbox<String, String> requests() {
    return requests;
  }

  Mailbox<String, String> replies() {
    return replies;
  }

  /** The URL a child process opens, for the durable backends. */
  String url() {
    if (db == null) {
      throw new UnsupportedOperationException("an in-memory queue cannot be shared with a process");
    }
    return db.url();
  }

  @Override
  public void close() {
    requests.close();
    replies.close();
    if (store != null) {
      store.close();
    }
    if (db != null) {
      db.close();
    }
  }
}
