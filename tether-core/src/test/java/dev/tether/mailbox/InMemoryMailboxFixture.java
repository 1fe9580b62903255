package dev.tether.mailbox;

import java.util.ArrayList;
import java.util.List;

/** Creates {@link InMemoryMailbox}es for the shared contract suites. */
final class InMemoryMailboxFixture implements MailboxFixture {
  private final List<InMemoryMailbox<String, String>> created = new ArrayList<>();

  @Override
  public Mailbox<String, String> create(String name, MailboxSpec spec) {
    InMemoryMailbox<String, String> mailbox =
        InMemoryMailbox.<String, String>builder(name)
            .clock(spec.clock())
            .maxAttempts(spec.maxAttempts())
            .capacity(spec.capacity())
            .build();
    created.add(mailbox);
    return mailbox;
  }

  @Override
  public List<String> deadLetteredIds(Mailbox<String, String> mailbox) {
    if (!(mailbox instanceof InMemoryMailbox<?, ?>)) {
      throw new IllegalArgumentException("not created by this fixture: " + mailbox);
    }
    List<String> ids = new ArrayList<>();
    for (DeadLetter<?> letter : ((InMemoryMailbox<?, ?>) mailbox).deadLetters()) {
      ids.add(letter.messageId());
    }
    return ids;
  }

  @Override
  public void close() {
    for (InMemoryMailbox<String, String> mailbox : created) {
      mailbox.close();
    }
    created.clear();
  }
}
