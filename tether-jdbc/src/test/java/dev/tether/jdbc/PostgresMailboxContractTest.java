package dev.tether.jdbc;

import dev.tether.mailbox.MailboxContractTest;
import dev.tether.mailbox.MailboxFixture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The shared Mailbox contract on JdbcMailbox over Postgres. */
class PostgresMailboxContractTest extends MailboxContractTest {
  private static SharedStore shared;

  @BeforeAll
  static void openStore() {
    shared = new SharedStore(TestDatabase.postgres());
  }

  @AfterAll
  static void closeStore() {
    shared.close();
  }

  @Override
  protected MailboxFixture createFixture() {
    return new JdbcMailboxFixture(shared.store);
  }
}
