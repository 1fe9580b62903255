package dev.tether.jdbc;

import dev.tether.mailbox.MailboxBadInputTest;
import dev.tether.mailbox.MailboxFixture;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/** The shared bad-input property on JdbcMailbox over Sqlite. */
class SqliteMailboxBadInputTest extends MailboxBadInputTest {
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
