import { eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import {
  acme,
  parentOrigin,
  useEmbeddedDashboard,
  SCREENSHOTS,
  newAccount,
  createToken,
  embedUrl,
  openEmbedded,
  screenshot,
  inboundSms,
} from './embed-dashboard';

useEmbeddedDashboard();

describe('the embedded dashboard', () => {
  it('builds a sequence of fixed and AI steps, lists it with its steps, pauses it, and enrolls and unenrolls a lead from the lead view', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125554001', name: 'Rosa Diaz' });
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125554002', name: 'Ira Moss' });
    const { page, frame } = await openEmbedded(embedUrl(await createToken(account.id)));
    await frame.getByRole('tab', { name: 'Sequences' }).click();
    await frame.getByText('No sequences yet.').waitFor();
    await frame.getByRole('button', { name: 'New sequence' }).click();
    await frame.getByLabel('Sequence name').fill('New lead follow-up');
    await frame.getByLabel('Sequence description').fill('For leads from the website');
    // A misspelt variable is refused, saying where.
    await frame.getByLabel('Step 1 message').fill('Hi {{frist_name}}!');
    await frame.getByRole('button', { name: 'Create sequence' }).click();
    await frame
      .getByRole('alert')
      .getByText(/steps 1 message: Unknown template variable/)
      .waitFor();
    expect((await acme.get(`/accounts/${account.id}/sequences`)).body.total).toBe(0);
    await frame
      .getByLabel('Step 1 message')
      .fill('Hi {{first_name}}, thanks for reaching out to {{company}}!');
    await frame.getByRole('button', { name: 'Add step' }).click();
    await frame.getByLabel('Step 2 type').selectOption('ai');
    await frame.getByLabel('Step 2 delay in hours').fill('24');
    await frame.getByLabel('Step 2 instructions').fill('Ask whether they have found a home yet.');
    await frame.getByLabel('Step 2 skip if replied').uncheck();
    await screenshot(page, 'sequence-builder');
    await frame.getByRole('button', { name: 'Create sequence' }).click();

    const list = frame.getByRole('list', { name: 'Sequences' });
    await list.getByText('New lead follow-up').waitFor();
    await list.getByText('2 steps · 0 enrolled').waitFor();
    const steps = frame.getByRole('list', { name: 'Steps' });
    await steps.getByText('Ask whether they have found a home yet.').waitFor();
    expect(await steps.locator('li').count()).toBe(2);
    expect(await steps.locator('li').nth(0).innerText()).toMatch(
      /Fixed[\s\S]*At once[\s\S]*skipped if they replied/,
    );
    expect(await steps.locator('li').nth(1).innerText()).toContain('1 day after the previous step');
    expect(await steps.locator('li').nth(1).innerText()).not.toContain('skipped if they replied');
    const { body: stored } = await acme.get(`/accounts/${account.id}/sequences`);
    expect(stored.sequences).toMatchObject([
      {
        name: 'New lead follow-up',
        description: 'For leads from the website',
        is_active: true,
        is_default: false,
        steps: [
          {
            order: 0,
            type: 'fixed',
            message: 'Hi {{first_name}}, thanks for reaching out to {{company}}!',
            delay_hours: 0,
            skip_if_replied: true,
          },
          {
            order: 1,
            type: 'ai',
            instructions: 'Ask whether they have found a home yet.',
            delay_hours: 24,
            skip_if_replied: false,
          },
        ],
      },
    ]);
    const sequenceId = stored.sequences[0].id as string;
    const current = async () => (await acme.get(`/accounts/${account.id}/sequences/${sequenceId}`)).body;

    await frame.getByRole('button', { name: 'Pause' }).click();
    await frame.getByRole('button', { name: 'Activate' }).waitFor();
    expect((await current()).is_active).toBe(false);
    await frame.getByRole('button', { name: 'Activate' }).click();
    await frame.getByRole('button', { name: 'Pause' }).waitFor();
    await frame.getByRole('button', { name: 'Make default' }).click();
    await list.getByText('Default').waitFor();
    expect(await current()).toMatchObject({ is_active: true, is_default: true });

    // Editing: a third step, then saved; the list and the stored sequence follow.
    await frame.getByRole('button', { name: 'Edit', exact: true }).click();
    await frame.getByRole('button', { name: 'Add step' }).click();
    await frame.getByLabel('Step 3 delay in hours').fill('72');
    await frame.getByLabel('Step 3 message').fill('Still there, {{first_name}}?');
    await frame.getByRole('button', { name: 'Save' }).click();
    await steps.getByText('Still there, {{first_name}}?').waitFor();
    await list.getByText('3 steps · 0 enrolled').waitFor();
    expect((await current()).steps).toHaveLength(3);
    await screenshot(page, 'sequences');

    // Enrolling from the lead view.
    await frame.getByRole('tab', { name: 'Leads' }).click();
    await frame.getByRole('table', { name: 'Leads' }).locator('[data-phone="+15125554001"]').click();
    const details = frame.getByRole('complementary', { name: 'Lead details' });
    await details.getByText('Not in a sequence.').waitFor();
    await details.getByLabel('Sequence to enroll in').selectOption({ label: 'New lead follow-up' });
    await details.getByRole('button', { name: 'Enroll' }).click();
    await details
      .getByRole('status')
      .getByText(/^Enrolled/)
      .waitFor();
    const enrollment = details.getByRole('region', { name: 'Sequences' });
    await enrollment.locator('.enrollment').getByText('New lead follow-up').waitFor();
    expect(await enrollment.locator('.enrollment').getAttribute('data-status')).toBe('active');
    expect(await enrollment.innerText()).toMatch(/of 3 steps done/);
    const { body: lead } = await acme.get(`/accounts/${account.id}/leads/%2B15125554001`);
    expect(lead.sequence).toMatchObject({ name: 'New lead follow-up', status: 'active', total_steps: 3 });
    await screenshot(page, 'lead-sequence');

    // And out of it again.
    await enrollment.getByRole('button', { name: 'Remove from sequence' }).click();
    await details.getByRole('status').getByText('Removed from the sequence.').waitFor();
    await eventually(async () =>
      (await enrollment.locator('.enrollment').getAttribute('data-status')) === 'cancelled'
        ? true
        : undefined,
    );
    expect(await enrollment.innerText()).toContain('Cancelled');
    expect(await enrollment.getByRole('button', { name: 'Remove from sequence' }).count()).toBe(0);
    const { body: after } = await acme.get(`/accounts/${account.id}/leads/%2B15125554001`);
    expect(after.sequence).toMatchObject({
      name: 'New lead follow-up',
      status: 'cancelled',
      next_step_at: null,
    });
    // Enrolled again by the partner's own system: the open details follow, live.
    await acme.post(`/accounts/${account.id}/sequences/${sequenceId}/enroll`, { phone: '+15125554001' });
    await eventually(async () =>
      (await enrollment.locator('.enrollment').getAttribute('data-status')) === 'active' ? true : undefined,
    );
    await frame.getByRole('tab', { name: 'Sequences' }).click();
    await list.getByText('3 steps · 2 enrolled').waitFor();
    // Enrolling by phone from the sequence itself, as people type numbers.
    await frame.getByLabel('Lead phone').fill('(512) 555-4002');
    await frame.getByRole('button', { name: 'Enroll', exact: true }).click();
    await frame
      .getByRole('status')
      .getByText(/^Enrolled/)
      .waitFor();
    await list.getByText('3 steps · 3 enrolled').waitFor();
    expect((await acme.get(`/accounts/${account.id}/leads/%2B15125554002`)).body.sequence).toMatchObject({
      name: 'New lead follow-up',
      status: 'active',
    });
    // At a phone's width the list sits above the sequence.
    await page.setViewportSize({ width: 480, height: 800 });
    await screenshot(page, 'sequences-narrow');

    // Deleting it stops it for the enrolled lead.
    await frame.getByRole('button', { name: 'Delete', exact: true }).click();
    await frame.getByRole('button', { name: 'Delete for good' }).click();
    await frame.getByText('No sequences yet.').waitFor();
    expect((await acme.get(`/accounts/${account.id}/sequences/${sequenceId}`)).status).toBe(404);
    expect((await acme.get(`/accounts/${account.id}/leads/%2B15125554001`)).body.sequence.status).toBe(
      'cancelled',
    );
  });

  it('edits and deletes a lead from its details', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, {
      phone: '+15125555001',
      name: 'Sam Ortiz',
      email: 'sam@example.com',
    });
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125555002', name: 'Kim Lee' });
    await inboundSms(account.number, '+15125555001', 'Hello there');
    const { page, frame } = await openEmbedded(embedUrl(await createToken(account.id, { view: 'leads' })));
    const table = frame.getByRole('table', { name: 'Leads' });
    await table.locator('[data-phone="+15125555001"]').click();
    const details = frame.getByRole('complementary', { name: 'Lead details' });
    await details.getByText('sam@example.com').waitFor();
    await details.getByRole('button', { name: 'Edit' }).click();
    const editor = details.getByRole('form', { name: 'Edit lead' });
    await editor.getByLabel('Name').fill('Samuel Ortiz');
    await editor.getByLabel('Email').fill('');
    await editor.getByLabel('Company').fill('Ortiz Builders');
    await editor.getByLabel('Notes').fill('Prefers texts after 5 pm');
    await editor.getByRole('button', { name: 'Save' }).click();
    await details.getByText('Ortiz Builders').waitFor();
    await details.getByText('Prefers texts after 5 pm').waitFor();
    await table.getByText('Samuel Ortiz').waitFor();
    expect(await details.getByText('sam@example.com').count()).toBe(0);
    const { body: edited } = await acme.get(`/accounts/${account.id}/leads/%2B15125555001`);
    expect(edited).toMatchObject({
      name: 'Samuel Ortiz',
      email: null,
      company: 'Ortiz Builders',
      notes: 'Prefers texts after 5 pm',
    });
    await screenshot(page, 'lead-edit');

    await details.getByRole('button', { name: 'Delete lead' }).click();
    await details.getByRole('button', { name: 'Delete for good' }).click();
    await eventually(async () =>
      (await table.locator('[data-phone="+15125555001"]').count()) === 0 ? true : undefined,
    );
    expect(await frame.getByRole('complementary', { name: 'Lead details' }).count()).toBe(0);
    await frame.getByText('1–1 of 1').waitFor();
    expect((await acme.get(`/accounts/${account.id}/leads/%2B15125555001`)).status).toBe(404);
    // The conversation stays.
    const { body: messages } = await acme.get(
      `/accounts/${account.id}/conversations/%2B15125555001/messages`,
    );
    expect(messages.messages.map((message: { body: string }) => message.body)).toEqual(['Hello there']);
  });

  it('edits the AI prompt, guided and advanced, and the company context files and pages', async () => {
    const account = await newAccount();
    const { page, frame } = await openEmbedded(embedUrl(await createToken(account.id, { view: 'settings' })));
    const prompt = frame.getByRole('region', { name: 'AI prompt' });
    await prompt.getByLabel('Role and persona').fill('Maya, the loan assistant of {{company}}');
    await prompt.getByLabel('Tone and voice').fill('Warm and plain-spoken');
    await prompt.getByRole('button', { name: 'Save prompt' }).click();
    await prompt.getByRole('status').getByText('Saved').waitFor();
    const saved = async () => (await acme.get(`/accounts/${account.id}/settings/prompt`)).body;
    expect(await saved()).toMatchObject({
      mode: 'guided',
      role_persona: 'Maya, the loan assistant of {{company}}',
      tone_voice: 'Warm and plain-spoken',
      response_style: null,
    });
    await screenshot(page, 'settings-ai');
    // The page's shot starts where the frame is scrolled to; the prompt's own shows all of it.
    await prompt.screenshot({ path: `${SCREENSHOTS}settings-ai-prompt.png` });
    await prompt.getByText('Prompt as the assistant sees it').click();
    expect(await prompt.getByLabel('Composed prompt').innerText()).toContain(
      'Maya, the loan assistant of Sunrise Home Loans',
    );

    const context = frame.getByRole('region', { name: 'Company context' });
    await context.getByLabel('Upload context file').setInputFiles({
      name: 'faq.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from('# FAQ\n\nWe close most loans in 21 days.\n'),
    });
    await context.getByRole('list', { name: 'Context files' }).getByText('faq.md').waitFor();
    // The prompt as the model sees it now carries the file, without a reload.
    await prompt.getByLabel('Composed prompt').getByText('We close most loans in 21 days.').waitFor();
    await context.getByLabel('Page address').fill(`${parentOrigin}/faq`);
    await context.getByRole('button', { name: 'Add page' }).click();
    await context.getByRole('list', { name: 'Context pages' }).getByText('Rates and FAQ').waitFor();
    expect((await acme.get(`/accounts/${account.id}/context/files`)).body.files).toMatchObject([
      { name: 'faq.md', file_type: 'md' },
    ]);
    expect((await acme.get(`/accounts/${account.id}/context/urls`)).body.urls).toMatchObject([
      { url: `${parentOrigin}/faq`, title: 'Rates and FAQ' },
    ]);
    await screenshot(page, 'settings-context');

    await prompt.getByText('Advanced').click();
    await prompt.getByLabel('System prompt').fill('You are the assistant of {{company}}. Be brief.');
    await prompt.getByRole('button', { name: 'Save prompt' }).click();
    await prompt.getByRole('status').getByText('Saved').waitFor();
    expect(await saved()).toMatchObject({
      mode: 'advanced',
      system_prompt: 'You are the assistant of {{company}}. Be brief.',
    });
    expect(await prompt.getByLabel('Composed prompt').innerText()).toContain(
      'You are the assistant of Sunrise Home Loans. Be brief.',
    );
    await context.getByRole('button', { name: 'Remove faq.md' }).click();
    await context.getByText('No files yet.').waitFor();
    await eventually(async () =>
      (await prompt.getByLabel('Composed prompt').innerText()).includes('21 days') ? undefined : true,
    );
    expect((await acme.get(`/accounts/${account.id}/context/files`)).body.files).toEqual([]);
  });
});
