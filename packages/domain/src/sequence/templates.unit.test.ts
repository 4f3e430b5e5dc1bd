import { describe, expect, it } from 'vitest';
import { renderTemplate, unknownVariables, valuesOf } from './templates';

const lead = {
  name: null,
  first_name: null,
  last_name: null,
  email: null,
  property_address: null,
};

describe('templates', () => {
  it('renders every variable from the lead and the account', () => {
    const values = valuesOf(
      { ...lead, name: 'Dana Scully', email: 'dana@example.com', property_address: '1 Main St' },
      'Sunrise',
    );
    expect(
      renderTemplate(
        '{{first_name}} {{last_name}} / {{name}} / {{company}} / {{email}} / {{property_address}}',
        values,
      ),
    ).toBe('Dana / Dana Scully / Sunrise / dana@example.com / 1 Main St');
  });

  it('never leaves "Hi ," for a missing value', () => {
    const values = valuesOf(lead, 'Sunrise');
    expect(renderTemplate('Hi {{first_name}}, from {{company}}.', values)).toBe('Hi there, from Sunrise.');
    expect(renderTemplate('Hi {{ first_name | friend }}!', values)).toBe('Hi friend!');
    expect(renderTemplate('Dear {{first_name}} {{last_name}}, hello', values)).toBe('Dear there, hello');
    expect(renderTemplate('Email {{email}}.', values)).toBe('Email.');
  });

  it('derives a first name from the full name and a full name from the parts', () => {
    expect(valuesOf({ ...lead, name: 'Fox Mulder' }, 'x').first_name).toBe('Fox');
    expect(valuesOf({ ...lead, first_name: 'Fox', last_name: 'Mulder' }, 'x').name).toBe('Fox Mulder');
  });

  it('names unknown variables', () => {
    expect(unknownVariables('Hi {{first_name}} {{nickname|pal}} {{ company }}')).toEqual(['nickname']);
  });
});
