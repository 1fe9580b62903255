package dev.tether.mailbox;

import java.util.List;

/**
 * How the shared Mailbox contract suites ({@code MailboxContractTest}, {@code MailboxModelTest})
 * create and inspect the implementation under test. Each implementation's test module provides
 * one; the suites create a fresh fixture per test (or per property try) and close it afterwards.
 */
public interface MailboxFixture extends AutoCloseable {

  /**
   * Creates a new, empty mailbox with String bodies and String replies.
   *
   * @param name a queue name unique within this fixture
   * @param spec the clock, delivery budget and capacity to honour
   * @return the mailbox; the fixture closes it in {@link #close()}
   */
  Mailbox<String, String> create(String name, MailboxSpec spec);

  /**
   * Returns the ids of the messages dead-lettered in {@code mailbox}, oldest first.
   *
   * @param mailbox a mailbox this fixture created
   * @return the ids
   */
  List<String> deadLetteredIds(Mailbox<String, String> mailbox);

  /**
   * Returns whether the implementation enforces {@link MailboxSpec#capacity()}.
   *
   * @return true if sends beyond the capacity throw {@link MailboxFullException}
   */
  default boolean supportsCapacity() {
    return true;
  }

  /** Releases everything the fixture created. */
  @Override
  void close();
}
