import dev.leadline.client.ApiClient;
import dev.leadline.client.ApiException;
import dev.leadline.client.api.AccountsApi;
import dev.leadline.client.api.LeadsApi;
import dev.leadline.client.api.UsageApi;
import dev.leadline.client.api.WebhooksApi;
import dev.leadline.client.model.Account;
import dev.leadline.client.model.CreateAccountRequest;
import dev.leadline.client.model.CreateWebhookRequest;
import dev.leadline.client.model.LeadImport;
import dev.leadline.client.model.LeadImportResult;
import dev.leadline.client.model.Usage;
import dev.leadline.client.model.Webhook;
import dev.leadline.client.model.WebhookList;
import java.net.URI;

/**
 * A partner's first integration in Java, written against the client openapi-generator makes from the
 * published document alone (`java`, native library): create an account, import a lead, read the usage
 * of a given month, and create and list a webhook.
 *
 * <p>{@code java Scenario <base URL> <partner key> <month YYYY-MM>}; prints one line per step and
 * exits non-zero on the first step that does not answer as documented.
 */
public final class Scenario {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) throw new IllegalArgumentException("usage: Scenario <base URL> <partner key> <YYYY-MM>");
    String baseUrl = args[0];
    String partnerKey = args[1];
    String month = args[2];

    ApiClient client = new ApiClient();
    client.updateBaseUri(baseUrl);
    client.setRequestInterceptor(request -> request.header("X-Partner-Key", partnerKey));

    try {
      // Only the required field: those with a default are optional in the request.
      Account account = new AccountsApi(client).createAccount(new CreateAccountRequest().name("Sunrise Mortgage"), null);
      check(account.getName().equals("Sunrise Mortgage"), "account name " + account.getName());
      System.out.println("account " + account.getId());

      LeadImportResult imported =
          new LeadsApi(client).importLead(account.getId(), new LeadImport().phone("+15125550123").firstName("Maria"), null);
      check(imported.getLead().getPhone().equals("+15125550123"), "lead phone " + imported.getLead().getPhone());
      System.out.println("lead " + imported.getAction().getValue() + " " + imported.getLead().getPhone());

      Usage usage = new UsageApi(client).getUsage(month, account.getId(), "account");
      check(usage.getPeriod().equals(month), "usage period " + usage.getPeriod() + ", asked for " + month);
      System.out.println("usage " + usage.getPeriod() + " leads_imported " + usage.getTotals().getLeadsImported());

      WebhooksApi webhooks = new WebhooksApi(client);
      Webhook created =
          webhooks.createWebhook(
              new CreateWebhookRequest()
                  .url(URI.create("https://crm.example.com/hooks/leadline"))
                  .addEventsItem(CreateWebhookRequest.EventsEnum.LEAD_CREATED)
                  .secret("a-secret-of-at-least-16-characters"),
              null);
      WebhookList listed = webhooks.listWebhooks();
      check(
          listed.getWebhooks().stream().anyMatch(webhook -> webhook.getId().equals(created.getId())),
          "webhook " + created.getId() + " not listed");
      System.out.println("webhook " + created.getId() + " listed with " + listed.getWebhooks().size());
    } catch (ApiException failure) {
      System.err.println("HTTP " + failure.getCode() + ": " + failure.getResponseBody());
      System.exit(1);
    }
  }

  private static void check(boolean condition, String what) {
    if (!condition) {
      System.err.println("unexpected " + what);
      System.exit(1);
    }
  }
}
