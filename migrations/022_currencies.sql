-- Every currency of the service's markets (src/domain/money.ts CURRENCIES holds the same rows):
-- Tanzania, Rwanda, Ghana and the DRC, whose networks carry two (the Congolese franc and the US
-- dollar). A wallet in one of them is made as in any other currency, by the first money it takes.
insert into currencies (id, code, name, minor_units) values
  (4, 'TZS', 'Tanzanian shilling', 0),
  (5, 'RWF', 'Rwandan franc', 0),
  (6, 'GHS', 'Ghanaian cedi', 2),
  (7, 'CDF', 'Congolese franc', 2),
  (8, 'USD', 'US dollar', 2)
on conflict (id) do nothing;

-- An amount in a currency has at most its minor units of decimals; the sandbox currency takes the
-- four every stored amount has, as it always did.
update currencies set minor_units = 4 where code = 'BXC';
