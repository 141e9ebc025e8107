import { holdsCredential, loggableUrl, withoutCredentials } from './loggable-url.js';

describe('loggableUrl', () => {
  it('keeps a URL without credentials in its query exactly as received', () => {
    for (const url of ['/branches', '/visits/standard?SvcClientId=1001&Take=5&after=abc%3D%3D', '/x?a&b=&=c', '/x?%E0%A4%A=1']) {
      expect(loggableUrl(url)).toBe(url);
    }
  });

  it('redacts credential parameters spelt with - or _ or neither', () => {
    expect(loggableUrl('/x?svc_api_key=a&client-secret=b&access-token=c&AccessToken=d&SvcClientId=1001&token=e')).toBe(
      '/x?svc_api_key=[redacted]&client-secret=[redacted]&access-token=[redacted]&AccessToken=[redacted]&SvcClientId=1001&token=[redacted]',
    );
  });

  it('redacts the values of credential parameters, whatever their case, encoding or brackets', () => {
    expect(loggableUrl('/connect/token?grant_type=client_credentials&client_id=svc_1&client_secret=s3cret')).toBe(
      '/connect/token?grant_type=client_credentials&client_id=svc_1&client_secret=[redacted]',
    );
    expect(loggableUrl('/branches?access_token=eyJ.x.y&SvcClientId=1')).toBe('/branches?access_token=[redacted]&SvcClientId=1');
    expect(loggableUrl('/x?Client%5FSecret=a&API-KEY=b&svc-api-key=c&password&client_secret[]=d')).toBe(
      '/x?Client%5FSecret=[redacted]&API-KEY=[redacted]&svc-api-key=[redacted]&password=[redacted]&client_secret[]=[redacted]',
    );
  });

  it('cuts a parameter name at its first bracket in linear time, however many brackets it has', () => {
    // /\[.*$/ tried every bracket to the end of a name holding a line break: about a minute
    // for this one. Linear, it is a few milliseconds.
    const name = `${'%5B'.repeat(200_000)}%0Ax`;
    const started = performance.now();
    expect(loggableUrl(`/x?${name}=1&client_secret%5B${name}=s`)).toBe(`/x?${name}=1&client_secret%5B${name}=[redacted]`);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('redacts the usual names of credentials, and credentials by their form wherever they stand', () => {
    expect(loggableUrl('/branches?SvcClientId=1&key=k1&jwt=j1&auth=a1&sig=s1&signature=s2&code=c1&pwd=p1')).toBe(
      '/branches?SvcClientId=1&key=[redacted]&jwt=[redacted]&auth=[redacted]&sig=[redacted]&signature=[redacted]&code=[redacted]&pwd=[redacted]',
    );
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
    expect(loggableUrl(`/branches?SvcClientId=1&t=${jwt}`)).toBe('/branches?SvcClientId=1&t=[redacted]');
    expect(loggableUrl(`/${jwt}/x`)).toBe('/[redacted]/x');
    expect(loggableUrl('/branches;k=svck_AbC-123_x?SvcClientId=1&h=whsec_Zz9')).toBe('/branches;k=[redacted]?SvcClientId=1&h=[redacted]');
    // A client secret, by its prefix, wherever it stands; a request id that is one is no request id.
    expect(loggableUrl('/branches/svcs_AbC-123_x?SvcClientId=svcs_Zz9')).toBe('/branches/[redacted]?SvcClientId=[redacted]');
    expect([holdsCredential('svcs_AbC-123_x'), holdsCredential('order-svcs_1'), holdsCredential('svc_0123abcd')]).toEqual([true, true, false]);
    // Escaped, a credential's form is still its form; names holding a credential's word are credentials' names.
    expect(loggableUrl('/health/live?k=%73vck_AbC123&j=%65yJa.b.c&x-api-key=SEKRET10&sessionToken=t&my_secret=s&Take=5')).toBe(
      '/health/live?k=[redacted]&j=[redacted]&x-api-key=[redacted]&sessionToken=[redacted]&my_secret=[redacted]&Take=5',
    );
    expect(loggableUrl('/menus/dishes/images/%77hsec_Zz9?a=%E0%A4%A')).toBe('/menus/dishes/images/[redacted]?a=%E0%A4%A');
    // A page token (two parts, sealed) is no credential.
    const after = '/visits/standard/changes?SvcClientId=1001&after=AQx7k2_-Zz.Tg9a';
    expect(loggableUrl(after)).toBe(after);
  });

  it('redacts the user name and password of a target in absolute form', () => {
    expect(loggableUrl('http://user:s3cret-Pass@results.example.com/branches?SvcClientId=1')).toBe(
      'http://[redacted]@results.example.com/branches?SvcClientId=1',
    );
    expect(loggableUrl('HTTPS://partner:p%40ss@host:8443')).toBe('HTTPS://[redacted]@host:8443');
    expect(loggableUrl('http://a:b@c@host/x?d=e@f')).toBe('http://[redacted]@host/x?d=e@f');
    // An @ after the authority is no userinfo.
    for (const url of ['http://host/x@y', 'http://host?x=a@b', '/branches?mail=a@b.example', '//host@x/branches']) expect(loggableUrl(url)).toBe(url);
  });

  it("takes 'eyJ' inside a word for text, not the start of a JWT; a JWT standing on its own, and keys and secrets anywhere, are redacted", () => {
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
    for (const text of ["menu 102 has one with code 'TurkeyJerky.Large.2'", 'monkeyJoe.v1.2', 'HockeyJ3.a.b']) expect(withoutCredentials(text)).toBe(text);
    expect(withoutCredentials(`code '${jwt}', bearer ${jwt}, t=${jwt}, (${jwt}) _${jwt}`)).toBe(
      "code '[redacted]', bearer [redacted], t=[redacted], ([redacted]) _[redacted]",
    );
    expect(withoutCredentials('Taxsvck_AbC and Xwhsec_Zz9 and TurkeyJ.svck_1')).toBe('Tax[redacted] and X[redacted] and TurkeyJ.[redacted]');
    expect(loggableUrl(`/x?a=${jwt}&b=turkeyJerky.a.b`)).toBe('/x?a=[redacted]&b=turkeyJerky.a.b');
    // Linear still: a run of 'eyJ' after a letter is tried at each 'eyJ', each try failing at once.
    const run = `a${'eyJ'.repeat(180_000)}`;
    const started = performance.now();
    expect(withoutCredentials(`${run}.x.y svck_1`)).toBe(`${run}.x.y [redacted]`);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('redacts a JWT glued to what stands before it, known by its two JSON segments, and keeps what is glued', () => {
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
    expect(withoutCredentials(`'Take' must be an integer: '1${jwt}'.`)).toBe("'Take' must be an integer: '1[redacted]'.");
    expect(loggableUrl(`/visits/standard?Take=1${jwt}&x=x${jwt}.more`)).toBe('/visits/standard?Take=1[redacted]&x=x[redacted].more');
    // Unsigned (an empty third segment), and two in one run.
    expect(withoutCredentials(`a${jwt.slice(0, -4)} b${jwt}.c${jwt}`)).toBe('a[redacted] b[redacted].c[redacted]');
    // Two segments only, or a second that is no JSON object: no JWT.
    for (const text of [`x${jwt.split('.').slice(0, 2).join('.')}`, 'TurkeyJerky.Large.2', 'okeyJ.eyes.x']) expect(withoutCredentials(text)).toBe(text);
    // Linear: runs of segments that start as JSON do.
    const run = `a${'eyJ.'.repeat(100_000)}`;
    const started = performance.now();
    expect(withoutCredentials(`${run} svck_1`)).toBe(`a[redacted].${'[redacted].'.repeat(33_332)}eyJ. [redacted]`);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('finds a key or secret in a run that starts as a JWT but is none', () => {
    expect(loggableUrl('/x?a=eyJabc_svck_AbC.d&b=eyJ.e')).toBe('/x?a=eyJabc_[redacted].d&b=eyJ.e');
    expect(loggableUrl('/x?a=eyJa.whsec_Zz9&b=eyJ-eyJ.p.q')).toBe('/x?a=eyJa.[redacted]&b=[redacted]');
    expect(holdsCredential('eyJabc-whsec_1')).toBe(true);
    expect(holdsCredential('eyJabc.def')).toBe(false);
    expect(holdsCredential('[redacted]')).toBe(false);
  });

  it("reads a run of 'eyJ' that is no JWT in linear time", () => {
    // 180,000 'eyJ' in a row: the search for a JWT, started again at each one and read to the run's end, took about a minute.
    const run = 'eyJ'.repeat(180_000);
    const started = Date.now();
    expect(loggableUrl(`/x?a=${run}&b=svck_1`)).toBe(`/x?a=${run}&b=[redacted]`);
    expect(holdsCredential(run)).toBe(false);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
