package dev.tether.mailbox;

/** Runs the shared {@link MailboxBadInputTest} against {@link InMemoryMailbox}. */
class InMemoryMailboxBadInputTest extends MailboxBadInputTest {
  @Override
  protected MailboxFixture createFixture() {
    return new InMemoryMailboxFixture();
  }
}
