package dev.tether.jdbc;

import dev.tether.mailbox.MailboxFixture;
import dev.tether.mailbox.MailboxModelTest;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/** The shared randomized Mailbox model test on JdbcMailbox over Sqlite. */
class SqliteMailboxModelTest extends MailboxModelTest {
  private static SharedStore shared;

  @BeforeContainer
  static void openStore() {
    shared = new SharedStore(TestDatabase.sqlite());
  }

  @AfterContainer
  static void closeStore() {
    shared.close();
  }

  @Override
  protected MailboxFixture createFixture() {
    return new JdbcMailboxFixture(shared.store);
  }
}
