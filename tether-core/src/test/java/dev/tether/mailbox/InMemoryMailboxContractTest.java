package dev.tether.mailbox;

/** Runs the shared {@link MailboxContractTest} against {@link InMemoryMailbox}. */
class InMemoryMailboxContractTest extends MailboxContractTest {
  @Override
  protected MailboxFixture createFixture() {
    return new InMemoryMailboxFixture();
  }
}
