package dev.tether.mailbox;

/** Runs the shared {@link MailboxModelTest} against {@link InMemoryMailbox}. */
class InMemoryMailboxModelTest extends MailboxModelTest {
  @Override
  protected MailboxFixture createFixture() {
    return new InMemoryMailboxFixture();
  }
}
